import {
  breakGlass, defaultDuration, durationHelp, durationOptions, modeChoices, requestable, requestFields, requestOf, requestProblems,
  type Me, type Mode,
} from '@tower-dev/breakglass-portal';
import { api } from '../api';
import { check, errorText, field, h, notice } from '../dom';
import { go } from '../main';
import { sessionURL } from './lists';

export async function requestPage(main: HTMLElement, me: Me) {
  const places = requestable(me);
  main.append(h('h1', {}, 'Request a debug session'));
  if (places.length === 0) {
    main.append(notice('info', 'You may not request sessions anywhere. Ask your administrator for the permission.'));
    return;
  }
  const f = requestFields;
  const cluster = h('select', { required: true }, places.map(c => h('option', { value: c.cluster }, c.tier && c.tier !== c.cluster ? `${c.cluster} (${c.tier})` : c.cluster)));
  const nsList = h('datalist', { id: 'namespaces' });
  const namespace = h('input', { type: 'text', required: true, list: 'namespaces', autocomplete: 'off', pattern: '[a-z0-9]([a-z0-9\\-]*[a-z0-9])?' });
  const pod = h('input', { type: 'text', required: true, autocomplete: 'off', spellcheck: 'false' });
  const container = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false' });
  const modeBoxes = modeChoices.map((m, i) => {
    const r = h('input', { type: 'radio', name: 'mode', value: m.value, id: 'mode-' + m.value, checked: i === 0, 'aria-describedby': 'mode-' + m.value + '-help' });
    return h('div', { class: 'radio' }, r, h('label', { for: 'mode-' + m.value }, m.label), h('p', { class: 'help', id: 'mode-' + m.value + '-help' }, m.help));
  });
  const duration = h('select', {}, durationOptions.map(d => h('option', { value: d.value, selected: d.value === defaultDuration }, d.label)));
  const [processAccess, processField] = check('process-access', f.processAccess.label, f.processAccess.help);
  const [keepPod, keepField] = check('keep-pod', f.keepPod.label, f.keepPod.help);
  const reason = h('textarea', { required: true, maxlength: 1024, rows: 3 });
  const out = h('div', { 'aria-live': 'polite' });

  const fillNamespaces = () => {
    const c = places.find(x => x.cluster === cluster.value)!;
    nsList.replaceChildren(...c.namespaces.filter(n => n !== '*').map(n => h('option', { value: n })));
    if (!namespace.value && c.namespaces.length === 1 && c.namespaces[0] !== '*') namespace.value = c.namespaces[0];
    const ns = namespace.value || c.namespaces[0];
    glassButton.hidden = !(c.breakGlass.includes('*') || c.breakGlass.includes(ns));
  };

  const ask = async (glassBroken: boolean) => {
    out.replaceChildren();
    const req = requestOf({ pod: pod.value, container: container.value, mode: (main.querySelector('input[name=mode]:checked') as HTMLInputElement).value as Mode,
      duration: duration.value, processAccess: processAccess.checked, keepPod: keepPod.checked, reason: reason.value, glassBroken });
    const problems = Object.values(requestProblems(req));
    if (problems.length) {
      out.replaceChildren(notice('error', problems.join(' ')));
      return;
    }
    try {
      const s = await api.request(cluster.value, namespace.value.trim(), req);
      go(sessionURL(s));
    } catch (e) {
      out.replaceChildren(notice('error', errorText(e)));
    }
  };

  const form = h('form', { onsubmit: (e: Event) => { e.preventDefault(); void ask(false); } },
    field('cluster', f.cluster.label, cluster),
    field('namespace', f.namespace.label, namespace, f.namespace.help), nsList,
    field('pod', f.pod.label, pod, f.pod.help),
    field('container', f.container.label, container, f.container.help),
    h('fieldset', {}, h('legend', {}, f.mode.label), modeBoxes),
    field('duration', f.duration.label, duration, durationHelp(me)),
    processField, keepField,
    field('reason', f.reason.label, reason, f.reason.help),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Request approval')),
  );

  const understood = h('input', { type: 'checkbox', id: 'glass-understood' });
  const glassDialog = h('section', { class: 'glass-warning', hidden: true, 'aria-labelledby': 'glass-title' },
    h('h2', { id: 'glass-title' }, breakGlass.title),
    h('p', {}, breakGlass.warning),
    h('div', { class: 'field check' }, understood, h('label', { for: 'glass-understood' }, breakGlass.understood)),
    h('button', { type: 'button', class: 'danger', id: 'glass-confirm', onclick: () => {
      if (!form.reportValidity()) return;
      if (!understood.checked) { out.replaceChildren(notice('error', breakGlass.notConfirmed)); return; }
      void ask(true);
    } }, breakGlass.confirm));
  const glassButton = h('button', { type: 'button', class: 'danger', id: 'break-glass', onclick: () => { glassDialog.hidden = false; understood.focus(); } }, breakGlass.button);
  form.querySelector('.actions')!.append(glassButton);
  cluster.addEventListener('change', fillNamespaces);
  namespace.addEventListener('input', fillNamespaces);
  main.append(form, glassDialog, out);
  fillNamespaces();
}
