// The console's way to the relay: its own origin, with the session cookie
// the relay set at sign-in (the page never sees a token). A 401 renews it
// once through the refresh cookie, else sends the person through sign-in,
// back to where they were; and the sign-in is renewed before it runs out,
// so that calls and the event stream never meet a 401 on the way.
import { PortalClient, RelayError, type Me, type Transport } from '@tower-dev/breakglass-portal';

export function signIn(): never {
  location.assign('/auth/login?next=' + encodeURIComponent(location.pathname + location.search));
  throw new RelayError(401, 'Unauthenticated', 'Your sign-in expired: signing in again.');
}

const renew = async () => {
  const r = await fetch('/auth/refresh', { method: 'POST', credentials: 'same-origin' });
  if (!r.ok) signIn();
  return true;
};

export const transport: Transport = {
  fetch: (path, init) => fetch(path, { ...init, credentials: 'same-origin' }),
  renew,
  terminal: async (path) => ({ url: location.origin.replace(/^http/, 'ws') + path, protocols: async () => [] }),
};

export const api = new PortalClient(transport);

/** keepSignedIn renews the sign-in a minute before the token /me names runs out, again and again. */
export function keepSignedIn(me: Me) {
  if (!me.expires) return;
  const wait = Math.max(10000, Date.parse(me.expires) - Date.now() - 60000);
  setTimeout(async () => {
    try {
      await renew();
      keepSignedIn(await api.me());
    } catch {
      // The next call's 401 renews it, or sends the person through sign-in.
    }
  }, wait);
}
