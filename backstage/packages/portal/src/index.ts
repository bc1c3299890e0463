/**
 * One source for both break-glass portals, the relay's console and Tower's
 * Backstage plugin: the relay's API types and client, its event stream,
 * what a person may do, the words they read, the forms and the timers.
 *
 * @packageDocumentation
 */
export * from './types';
export * from './client';
export * from './events';
export * from './access';
export * from './forms';
export * from './words';
export * from './evidence';
export * from './vocabulary.gen';
