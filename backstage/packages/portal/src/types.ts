// The relay's API types, as relay/openapi.yaml describes them:
// openapi-typescript writes api.gen.ts from it (npm run generate, which
// make console and make backstage run), and relay/openapi_test.go holds
// that document to the relay's Go types. Nothing here is typed by hand.
import type { components, paths } from './api.gen';

/** A session as the relay shows it, with what the caller may do to it (`may`). */
export type Session = components['schemas']['Session'];
/** What a person asks for. */
export type SessionRequest = components['schemas']['Request'];
/** An approver's answer. */
export type Decision = components['schemas']['Decision'];
/** A command rebuilt from a recording's keys. */
export type Command = components['schemas']['Command'];
/** Who the relay says the person is, and what they may do where. */
export type Me = paths['/api/v1/me']['get']['responses']['200']['content']['application/json'];
/** One cluster as /me shows it. */
export type ClusterView = NonNullable<Me['clusters']>[number];
/** A permission of the relay's configuration. */
export type Action = NonNullable<NonNullable<ClusterView['allowed']>[number]['actions']>[number];
/** A search of one recording. */
export type SessionSearch = paths['/api/v1/clusters/{cluster}/namespaces/{namespace}/sessions/{name}/recording/search']['get']['responses']['200']['content']['application/json'];
/** The live view of a running session the answering relay holds. */
export type LiveView = NonNullable<Session['live']>;
/** An approval, as the Session's status records it. */
export type Approval = NonNullable<Session['status']['approval']>;
