import { createRouteRef } from '@backstage/frontend-plugin-api';

/** The plugin's pages: the queues at its root, each session and the recordings below it. */
export const rootRouteRef = createRouteRef();
