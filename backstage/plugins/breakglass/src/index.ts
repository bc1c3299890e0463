/**
 * Tower's break-glass tab and pages for Backstage.
 *
 * @packageDocumentation
 */
export { breakglassPlugin as default, breakglassAuthApiRef, rootRouteRef } from './plugin';
export { breakglassApiRef, BreakglassClient, BreakglassError } from './api';
export type { Session, SessionRequest, Me } from './api';
