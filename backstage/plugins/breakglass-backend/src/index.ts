/**
 * Tower's break-glass routes for Backstage's backend.
 *
 * @packageDocumentation
 */
export { breakglassPlugin as default } from './plugin';
