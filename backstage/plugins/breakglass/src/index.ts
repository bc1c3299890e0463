/**
 * Tower's break-glass tab and pages for Backstage.
 *
 * @packageDocumentation
 */
export { breakglassPlugin as default, breakglassAuthApiRef, rootRouteRef } from './plugin';
export { breakglassApiRef, BreakglassClient, BackstageTransport } from './api';
export { RelayError } from '@tower-dev/breakglass-portal';
export type { Session, SessionRequest, Me } from '@tower-dev/breakglass-portal';
