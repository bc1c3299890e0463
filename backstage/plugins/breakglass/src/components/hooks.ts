import { useCallback, useEffect, useRef, useState } from 'react';
import { useApi } from '@backstage/frontend-plugin-api';
import { usePermission } from '@backstage/plugin-permission-react';
import {
  breakglassApprovePermission,
  breakglassEndPermission,
  breakglassReviewPermission,
  breakglassViewSensitivePermission,
} from '@tower-dev/backstage-plugin-breakglass-common';
import { isRequester, watchSessions, type Me, type Offer, type Session } from '@tower-dev/breakglass-portal';
import { breakglassApiRef } from '../api';

/** The person as the relay knows them. */
export function useMe() {
  const api = useApi(breakglassApiRef);
  const [me, setMe] = useState<Me>();
  const [error, setError] = useState<Error>();
  useEffect(() => {
    let live = true;
    api.me().then(m => live && setMe(m), e => live && setError(e));
    return () => {
      live = false;
    };
  }, [api]);
  return { me, error };
}

/** The sessions the person may see, read again whenever the relay's event stream says one changed. */
export function useSessions() {
  const api = useApi(breakglassApiRef);
  const { me, error: meError } = useMe();
  const [sessions, setSessions] = useState<Session[]>();
  const [error, setError] = useState<Error>();
  useEffect(() => {
    let live = true;
    const load = () => api.list().then(s => live && (setSessions(s), setError(undefined)), e => live && setError(e));
    load();
    const stop = watchSessions(api.transport, () => void load());
    return () => {
      live = false;
      stop();
    };
  }, [api]);
  return { me, sessions, error: error ?? meError };
}

/**
 * One session, read again when the relay says it changed, and every 2 s
 * while it runs (its idle and disconnect limits are the relay's count, not
 * the Session's). act runs an action and shows its answer, then a read
 * for the live limits; answers are shown in the order asked, so a read
 * sent before an action and answered after it never shows the session as
 * it was.
 */
export function useSession(cluster: string, namespace: string, name: string) {
  const api = useApi(breakglassApiRef);
  const [session, setSession] = useState<Session>();
  const [error, setError] = useState<Error>();
  const order = useRef({ asked: 0, shown: 0 });
  const fresh = useCallback(
    async (f: () => Promise<Session>) => {
      const mine = ++order.current.asked;
      const got = await f();
      if (mine > order.current.shown) {
        order.current.shown = mine;
        setSession(got);
      }
    },
    [],
  );
  const reload = useCallback(
    () => fresh(() => api.get(cluster, namespace, name)).then(() => setError(undefined), e => setError(e)),
    [api, fresh, cluster, namespace, name],
  );
  useEffect(() => {
    void reload();
    const stop = watchSessions(api.transport, e => {
      if (!e?.name || (e.cluster === cluster && e.namespace === namespace && e.name === name)) void reload();
    });
    return stop;
  }, [api, reload, cluster, namespace, name]);
  const active = session?.status.phase === 'Active';
  useEffect(() => {
    if (!active) return undefined;
    const t = setInterval(() => void reload(), 2000);
    return () => clearInterval(t);
  }, [active, reload]);
  const act = useCallback(
    async (f: () => Promise<Session>) => {
      setError(undefined);
      try {
        await fresh(f);
        await fresh(() => api.get(cluster, namespace, name));
      } catch (e) {
        setError(e as Error);
      }
    },
    [api, fresh, cluster, namespace, name],
  );
  return { session, error, reload, act };
}

/** now ticks every second, for countdowns. */
export function useNow() {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  return now;
}

/**
 * useOffers is what this page offers the person on s: the relay's offers
 * (its own rules) that Backstage's permission policy allows too, as the
 * backend plugin will judge them. A person sees only what both layers let
 * them do.
 */
export function useOffers(me: Me | undefined, s: Session | undefined): (o: Offer) => boolean {
  const approve = usePermission({ permission: breakglassApprovePermission }).allowed;
  const end = usePermission({ permission: breakglassEndPermission }).allowed;
  const review = usePermission({ permission: breakglassReviewPermission }).allowed;
  const sensitive = usePermission({ permission: breakglassViewSensitivePermission }).allowed;
  return (o: Offer) => {
    if (!s || !(s.may ?? []).includes(o)) return false;
    const mine = isRequester(me, s);
    switch (o) {
      case 'approve':
      case 'deny':
      case 'watch':
      case 'decideExtension':
        return approve;
      case 'cancel':
        return approve || end;
      case 'end':
        // A moderator (approve) ends a moderated session they watch: the
        // relay offers it only then.
        return mine || end || (approve && Boolean(s.live?.moderated));
      case 'review':
        return review;
      case 'play':
        return !s.status.approval?.processAccess || sensitive;
    }
    return true;
  };
}
