import { api, can } from '../api.js';
import { h, notice } from '../dom.js';
import { go } from '../main.js';
import { sessionURL } from './lists.js';

const modes = [
  ['live', 'Live', 'A debug container joins the running pod: you see what it sees now. The pod is recycled afterwards unless the approver keeps it.'],
  ['copy', 'Copy', 'A copy of the pod that takes no traffic; the original is untouched.'],
  ['heldCopy', 'Held copy', 'A copy whose app containers do not start their program: for a pod that crashes at start.'],
];

// field is a labelled control with its explanation, tied by aria-describedby.
function field(id, label, control, help) {
  control.id = id;
  if (help) control.setAttribute('aria-describedby', id + '-help');
  return h('div', { class: 'field' }, h('label', { for: id }, label), control, help ? h('p', { class: 'help', id: id + '-help' }, help) : null);
}

function check(id, label, help) {
  const box = h('input', { type: 'checkbox', id, 'aria-describedby': id + '-help' });
  return [box, h('div', { class: 'field check' }, box, h('label', { for: id }, label), h('p', { class: 'help', id: id + '-help' }, help))];
}

export async function requestPage(main, me) {
  const clusters = me.clusters.filter((c) => c.allowed.some((a) => a.actions.includes('request') || a.actions.includes('breakGlass')));
  main.append(h('h1', {}, 'Request a debug session'));
  if (clusters.length === 0) {
    main.append(notice('info', 'You may not request sessions anywhere. Ask your administrator for the permission.'));
    return;
  }
  const cluster = h('select', { required: true }, clusters.map((c) => h('option', { value: c.name }, c.tier && c.tier !== c.name ? `${c.name} (${c.tier})` : c.name)));
  const nsList = h('datalist', { id: 'namespaces' });
  const namespace = h('input', { type: 'text', required: true, list: 'namespaces', autocomplete: 'off', pattern: '[a-z0-9]([a-z0-9\\-]*[a-z0-9])?' });
  const pod = h('input', { type: 'text', required: true, autocomplete: 'off', spellcheck: 'false' });
  const container = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false' });
  const modeBoxes = modes.map(([v, label, help], i) => {
    const r = h('input', { type: 'radio', name: 'mode', value: v, id: 'mode-' + v, checked: i === 0, 'aria-describedby': 'mode-' + v + '-help' });
    return h('div', { class: 'radio' }, r, h('label', { for: 'mode-' + v }, label), h('p', { class: 'help', id: 'mode-' + v + '-help' }, help));
  });
  const duration = h('select', {}, [15, 30, 45, 60, 75].map((m) => h('option', { value: `${m}m`, selected: m === 30 }, `${m} minutes`)));
  const [processAccess, processField] = check('process-access', 'Ask for process access',
    'Lets the debug container see the app container\'s processes, their memory and their environment (which may hold secrets). The approver decides; the recording becomes sensitive.');
  const [keepPod, keepField] = check('keep-pod', 'Ask to keep the pod afterwards',
    'A pod someone debugged is deleted and replaced when the session ends. Keeping it is the approver\'s choice.');
  const reason = h('textarea', { required: true, maxlength: 1024, rows: 3 });
  const out = h('div', { 'aria-live': 'polite' });

  const fillNamespaces = () => {
    const c = clusters.find((x) => x.name === cluster.value);
    const names = new Set(c.allowed.filter((a) => a.actions.includes('request') || a.actions.includes('breakGlass')).flatMap((a) => a.namespaces));
    nsList.replaceChildren(...[...names].filter((n) => n !== '*').map((n) => h('option', { value: n })));
    if (!namespace.value && names.size === 1 && !names.has('*')) namespace.value = [...names][0];
    glassButton.hidden = !can(me, 'breakGlass', cluster.value, namespace.value || [...names][0]);
  };

  const ask = async (glassBroken) => {
    out.replaceChildren();
    const req = {
      pod: pod.value.trim(), container: container.value.trim() || undefined,
      mode: main.querySelector('input[name=mode]:checked').value, duration: duration.value,
      processAccess: processAccess.checked || undefined, keepPod: keepPod.checked || undefined,
      reason: reason.value, glassBroken: glassBroken || undefined,
    };
    try {
      const s = await api.request(cluster.value, namespace.value.trim(), req);
      go(sessionURL(s));
    } catch (e) {
      out.replaceChildren(notice('error', e.message));
    }
  };

  const form = h('form', { onsubmit: (e) => { e.preventDefault(); ask(false); } },
    field('cluster', 'Cluster', cluster),
    field('namespace', 'Namespace', namespace, 'Where the pod runs.'), nsList,
    field('pod', 'Pod', pod, 'The pod\'s name, as kubectl get pods shows it.'),
    field('container', 'App container', container, 'The container whose processes you need to see; required with process access.'),
    h('fieldset', {}, h('legend', {}, 'Mode'), modeBoxes),
    field('duration', 'Duration', duration, `The session ends at this hard stop whatever happens; also after ${Math.round(me.idleSeconds / 60)} minutes without typing or ${Math.round(me.disconnectSeconds / 60)} minutes with nobody watching.`),
    processField, keepField,
    field('reason', 'Reason', reason, 'Why you need it: the approver and the audit log see this.'),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Request approval')),
  );

  const understood = h('input', { type: 'checkbox', id: 'glass-understood' });
  const glassDialog = h('section', { class: 'glass-warning', hidden: true, 'aria-labelledby': 'glass-title' },
    h('h2', { id: 'glass-title' }, 'Break the glass?'),
    h('p', {}, 'Nobody approves it first: once you press Start on its page, it runs at once. Everyone is told straight away, every byte is recorded, and someone else must review the session afterwards: a review falls due, and an overdue one goes to the fallback reviewer.'),
    h('div', { class: 'field check' }, understood, h('label', { for: 'glass-understood' }, 'I understand: this is an emergency and I will be asked why.')),
    h('button', { type: 'button', class: 'danger', id: 'glass-confirm', onclick: () => {
      if (!form.reportValidity()) return;
      if (!understood.checked) { out.replaceChildren(notice('error', 'Tick the box to confirm you understand what breaking the glass does.')); return; }
      ask(true);
    } }, 'Break the glass now'));
  const glassButton = h('button', { type: 'button', class: 'danger', id: 'break-glass', onclick: () => { glassDialog.hidden = false; understood.focus(); } }, 'Break the glass…');
  form.querySelector('.actions').append(glassButton);
  cluster.addEventListener('change', fillNamespaces);
  namespace.addEventListener('input', fillNamespaces);
  main.append(form, glassDialog, out);
  fillNamespaces();
}
