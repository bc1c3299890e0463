import express, { NextFunction, Request, Response } from 'express';
import { LoggerService } from '@backstage/backend-plugin-api';
import { parseEntityRef, stringifyEntityRef } from '@backstage/catalog-model';
import {
  breakglassApprovePermission,
  breakglassBreakGlassPermission,
  breakglassEndPermission,
  breakglassEntityHeader,
  breakglassRequestPermission,
  breakglassReviewPermission,
  breakglassViewSensitivePermission,
} from '@tower-dev/backstage-plugin-breakglass-common';
import { Person, People, RefusedError } from './person';
import { Relay, segment } from './relay';
import { requestKeys, type Session } from '@tower-dev/breakglass-portal';
import { PodFinder } from './pods';
import { Notifier } from './notify';
import { terminalUpgrades } from './terminal';
import type { RouterOptions } from './options';

const one = '/api/v1/clusters/:cluster/namespaces/:namespace/sessions/:name';

// The Kubernetes plugin's annotations say where an entity runs: a request
// from its tab must be for that namespace, so owning one component does not
// reach another's pods through a made-up entity reference.
const namespaceAnnotation = 'backstage.io/kubernetes-namespace';

/**
 * The plugin's routes, under /api/breakglass: /api/v1/... mirrors the
 * relay's one for one (any client of the relay works through Backstage,
 * given the two credentials). Each call is checked against Backstage's
 * permissions first, then forwarded with the person's own ID token; the
 * relay checks it all again on its own rules.
 */
export async function createRouter(options: RouterOptions): Promise<express.Router> {
  const { logger, permissions } = options;
  const relay = new Relay(options.config.getString('breakglass.relayURL'));
  const people = new People(options);
  const notifier = new Notifier(options, logger);
  const pods = new PodFinder(options);
  const router = express.Router();
  router.use(express.text({ type: () => true, limit: '64kb' }));
  router.use(terminalUpgrades(options, people, relay));

  const allowed = async (p: Person, permission: any, resourceRef?: string) => {
    const [decision] = await permissions.authorize([resourceRef ? { permission, resourceRef } : { permission }], {
      credentials: p.credentials,
    });
    return decision.result === 'ALLOW';
  };
  const refuse = (p: Person, what: string) => {
    throw new RefusedError(403, 'Forbidden', `Backstage's permissions do not let ${p.user.userEntityRef} ${what}`);
  };
  const route = (fn: (req: Request, res: Response, p: Person) => Promise<void>) =>
    (req: Request, res: Response, next: NextFunction) => {
      Promise.resolve()
        .then(() => checkPath(req))
        .then(() => people.of(req))
        .then(p => fn(req, res, p))
        .catch(e => answerError(res, e, logger))
        .catch(next);
    };
  const sessionPath = (req: Request) =>
    `/api/v1/clusters/${enc(req.params.cluster)}/namespaces/${enc(req.params.namespace)}/sessions/${enc(req.params.name)}`;
  const session = (req: Request, p: Person) => relay.json<Session>('GET', sessionPath(req), p);

  router.get('/api/v1/me', route((req, res, p) => relay.forward(req, res, p, '/api/v1/me')));
  router.get('/api/v1/sessions', route((req, res, p) => relay.forward(req, res, p, `/api/v1/sessions${query(req)}`)));
  router.get('/api/v1/events', route((req, res, p) => relay.forward(req, res, p, `/api/v1/events${query(req)}`)));

  router.post(
    '/api/v1/clusters/:cluster/namespaces/:namespace/sessions',
    route(async (req, res, p) => {
      const body = parseBody(req);
      if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        throw new RefusedError(400, 'BadRequest', 'a request is a JSON object: pod, mode, duration, reason, ...');
      }
      for (const k of Object.keys(body)) {
        if (!requestFields.includes(k)) {
          throw new RefusedError(400, 'BadRequest', `a request has no field ${JSON.stringify(k)} (fields: ${requestFields.join(', ')})`);
        }
      }
      const entityRef = req.header(breakglassEntityHeader) ?? '';
      if (!entityRef) {
        throw new RefusedError(400, 'BadRequest', `a request names the component it is for: ${breakglassEntityHeader}: component:namespace/name`);
      }
      let ref;
      try {
        ref = parseEntityRef(entityRef);
      } catch (e) {
        throw new RefusedError(400, 'BadRequest', `${breakglassEntityHeader}: ${(e as Error).message}`);
      }
      // Looked up as the person: an entity they may not see is not found.
      const entity = ref.kind.toLowerCase() === 'component' ? await people.entity(stringifyEntityRef(ref), p.credentials) : undefined;
      if (!entity) {
        throw new RefusedError(404, 'NotFound', `no component ${entityRef} in the catalog that you may see`);
      }
      // The entity's owners write this annotation: the relay's namespace
      // permissions, from the issuer's groups, are what holds an owner who
      // names a namespace not theirs (docs/backstage.md).
      const ns = entity.metadata.annotations?.[namespaceAnnotation];
      if (!ns) {
        throw new RefusedError(403, 'Forbidden', `${stringifyEntityRef(entity)} has no ${namespaceAnnotation} annotation: nothing says where it runs`);
      }
      if (ns !== req.params.namespace) {
        throw new RefusedError(403, 'Forbidden', `${stringifyEntityRef(entity)} runs in namespace ${ns}, not ${req.params.namespace}`);
      }
      const glass = body?.glassBroken === true;
      const permission = glass ? breakglassBreakGlassPermission : breakglassRequestPermission;
      if (!(await allowed(p, permission, stringifyEntityRef(entity)))) {
        refuse(p, glass ? `break the glass on ${stringifyEntityRef(entity)}` : `ask for a session on ${stringifyEntityRef(entity)}`);
      }
      // The pod is checked now, where Backstage can read it (its Kubernetes
      // plugin's account), not at the start after someone approved it.
      await pods.check(entity, req.params.cluster, typeof body.pod === 'string' ? body.pod : '', p);
      const created = await relay.json<Session>('POST', `/api/v1/clusters/${enc(req.params.cluster)}/namespaces/${enc(req.params.namespace)}/sessions`, p, req.body);
      res.status(201).json(created);
      await notifier.requested(created, stringifyEntityRef(entity));
    }),
  );
  router.get(one, route((req, res, p) => relay.forward(req, res, p, sessionPath(req))));
  for (const decision of ['approve', 'deny'] as const) {
    router.post(
      `${one}/${decision}`,
      route(async (req, res, p) => {
        // Withdrawing one's own request is an end, not a denial.
        if (!(await allowed(p, breakglassApprovePermission))) {
          refuse(p, `${decision} sessions`);
        }
        const decided = await relay.json<Session>('POST', `${sessionPath(req)}/${decision}`, p, req.body);
        res.json(decided);
        await notifier.decided(decided, decision);
      }),
    );
  }
  router.post(`${one}/start`, route((req, res, p) => relay.forward(req, res, p, `${sessionPath(req)}/start`)));
  router.post(
    `${one}/end`,
    route(async (req, res, p) => {
      const s = await session(req, p);
      // One's own session can always be ended: ending never widens access.
      // An approver cancels a request not yet started; a running session
      // of someone else's ends by the end permission.
      if (!p.asked(s)) {
        // Someone else's session ends by the end permission. An approver
        // cancels one not yet started, and ends a moderated running one
        // they watch (the relay judges both again).
        const notStarted = s.status.phase === 'Pending' || s.status.phase === 'Approved';
        const moderating = s.status.phase === 'Active' && s.live?.moderated === true &&
          (s.live.attached ?? []).some(a => !a.typing && a.name === p.name);
        const may = ((notStarted || moderating) && (await allowed(p, breakglassApprovePermission))) || (await allowed(p, breakglassEndPermission));
        if (!may) refuse(p, "end someone else's session");
      }
      await relay.forward(req, res, p, `${sessionPath(req)}/end`);
    }),
  );
  // More time: the requester asks (the relay holds asks to their own
  // sessions), an approver decides.
  router.post(`${one}/extensions`, route((req, res, p) => relay.forward(req, res, p, `${sessionPath(req)}/extensions`)));
  for (const decision of ['approve', 'deny'] as const) {
    router.post(
      `${one}/extensions/${decision}`,
      route(async (req, res, p) => {
        if (!(await allowed(p, breakglassApprovePermission))) refuse(p, `${decision} more time on sessions`);
        await relay.forward(req, res, p, `${sessionPath(req)}/extensions/${decision}`);
      }),
    );
  }
  router.post(
    `${one}/review`,
    route(async (req, res, p) => {
      if (!(await allowed(p, breakglassReviewPermission))) refuse(p, 'review sessions');
      await relay.forward(req, res, p, `${sessionPath(req)}/review`);
    }),
  );
  // A recording, its commands and its search: a sensitive one (granted
  // process access) only for those Backstage lets view sensitive recordings.
  for (const [sub, params] of [['recording', ['file']], ['recording/commands', []], ['recording/search', ['q', 'stream']]] as const) {
    router.get(
      `${one}/${sub}`,
      route(async (req, res, p) => {
        const s = await session(req, p);
        if ((s.status.approval?.processAccess ?? s.spec.processAccess) && !(await allowed(p, breakglassViewSensitivePermission))) {
          refuse(p, 'play the recording of a session with process access');
        }
        const q = new URLSearchParams();
        for (const k of params) if (typeof req.query[k] === 'string') q.set(k, req.query[k] as string);
        await relay.forward(req, res, p, `${sessionPath(req)}/${sub}${q.size ? `?${q}` : ''}`);
      }),
    );
  }
  router.use((_req: Request, res: Response) => {
    res.status(404).json({ error: { reason: 'NotFound', message: 'no such break-glass endpoint' } });
  });
  return router;
}

const enc = encodeURIComponent;

// A request's fields as the relay's Request names them (requestKeys, from
// the Go type): Go matches JSON keys regardless of case, so "GlassBroken"
// would break the glass there while this layer checked only the request
// permission. A key spelled any other way is refused here.
const requestFields = requestKeys;

function checkPath(req: Request) {
  for (const k of ['cluster', 'namespace', 'name'] as const) {
    const v = req.params[k];
    if (v !== undefined && !segment.test(v)) {
      throw new RefusedError(400, 'BadRequest', `${k}: ${JSON.stringify(v)} is not a name`);
    }
  }
}

// query passes a list's filters on as they came (the relay checks them).
function query(req: Request) {
  const i = req.originalUrl.indexOf('?');
  return i < 0 ? '' : req.originalUrl.slice(i);
}

function parseBody(req: Request): any {
  if (typeof req.body !== 'string' || req.body === '') return undefined;
  try {
    return JSON.parse(req.body);
  } catch (e) {
    throw new RefusedError(400, 'BadRequest', `the body is not JSON: ${(e as Error).message}`);
  }
}

// answerError answers as the relay does ({"error": {reason, message}}), so
// the page shows one kind of error whichever layer refused.
export function answerError(res: Response, e: unknown, logger: LoggerService) {
  if (e instanceof RefusedError) {
    res.status(e.status).json({ error: { reason: e.reason, message: e.message } });
    return;
  }
  const name = (e as Error)?.name;
  if (name === 'AuthenticationError' || name === 'NotAllowedError') {
    res.status(name === 'AuthenticationError' ? 401 : 403).json({ error: { reason: 'Unauthenticated', message: (e as Error).message } });
    return;
  }
  // A Backstage service's refusal (the permission backend's, say) carries
  // its own message; anything else is this backend's fault or the relay's.
  const detail = (e as any)?.body?.error?.message;
  logger.error(`break-glass call failed: ${e}${detail ? `: ${detail}` : ''}`);
  const unreachable = (e as any)?.cause?.code === 'ECONNREFUSED' || name === 'FetchError' || (e as Error)?.message === 'fetch failed';
  res.status(unreachable ? 502 : 500).json({
    error: unreachable
      ? { reason: 'RelayUnreachable', message: 'the relay could not be reached' }
      : { reason: 'Internal', message: 'the break-glass backend failed; its log says why' },
  });
}
