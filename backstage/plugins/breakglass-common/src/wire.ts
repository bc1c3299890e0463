// The names the frontend and backend plugins speak to each other by.

/** Carries the person's own ID token from the organisation's issuer, which the relay verifies. */
export const breakglassIdentityHeader = 'x-breakglass-identity';

/** Names the catalog entity a request is for (the tab it was made on). */
export const breakglassEntityHeader = 'x-breakglass-entity';

/**
 * A browser cannot set headers on a WebSocket: the terminal's page sends
 * its Backstage token and the ID token as subprotocols with these prefixes,
 * beside the terminal's own.
 */
export const breakglassTerminalProtocol = 'breakglass.terminal.v1';
export const breakglassBackstageTokenPrefix = 'backstage.breakglass.tower.dev.';
export const breakglassIdentityTokenPrefix = 'identity.breakglass.tower.dev.';
