// h builds elements from text only (never HTML strings), so nothing a
// person typed, such as a session's reason, can become markup.
export type Child = Node | string | number | null | undefined | false | Child[];
type Attrs = Record<string, unknown>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v as EventListener);
    else if (k === 'class') el.className = String(v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el: HTMLElement, children: Child[]) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// link is an in-page link: the router follows it without a reload.
export const link = (href: string, ...children: Child[]) => h('a', { href, 'data-route': true }, ...children);

// notice is a live region: what the page says after an action is read out.
export const notice = (kind: 'info' | 'error', text: string) =>
  h('p', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text);

// field is a labelled control with its explanation, tied by aria-describedby.
export function field(id: string, label: string, control: HTMLElement, help?: string) {
  control.id = id;
  if (help) control.setAttribute('aria-describedby', id + '-help');
  return h('div', { class: 'field' }, h('label', { for: id }, label), control, help ? h('p', { class: 'help', id: id + '-help' }, help) : null);
}

// check is a labelled checkbox with its explanation.
export function check(id: string, label: string, help: string): [HTMLInputElement, HTMLElement] {
  const box = h('input', { type: 'checkbox', id, 'aria-describedby': id + '-help' });
  return [box, h('div', { class: 'field check' }, box, h('label', { for: id }, label), h('p', { class: 'help', id: id + '-help' }, help))];
}

// errorText is what an error says to a person.
export const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e));
