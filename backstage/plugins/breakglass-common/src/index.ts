/**
 * Tower's break-glass permissions, the first of the plane's fences: a
 * Backstage permission policy decides who may ask for, approve, break the
 * glass on, end, review and play a sensitive recording of a debug session.
 * The relay checks each again on its own rules, so a policy that allows
 * too much still meets the relay's refusal.
 *
 * @packageDocumentation
 */
export * from './permissions';
export * from './wire';
