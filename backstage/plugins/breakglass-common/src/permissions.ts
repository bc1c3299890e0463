import { createPermission } from '@backstage/plugin-permission-common';
import { RESOURCE_TYPE_CATALOG_ENTITY } from '@backstage/plugin-catalog-common/alpha';

// Asking for a session and breaking the glass are about a component: they
// are resource permissions on its catalog entity, so a policy can answer
// with the catalog's conditions (isEntityOwner: the entity's owners may
// ask) and the catalog decides them against the entity itself.

/** Ask for a debug session on one of an entity's pods, and start it once approved. */
export const breakglassRequestPermission = createPermission({
  name: 'breakglass.session.request',
  attributes: { action: 'create' },
  resourceType: RESOURCE_TYPE_CATALOG_ENTITY,
});

/** Start a session on an entity's pod without approval; someone else reviews it after. */
export const breakglassBreakGlassPermission = createPermission({
  name: 'breakglass.session.breakglass',
  attributes: { action: 'create' },
  resourceType: RESOURCE_TYPE_CATALOG_ENTITY,
});

// The others are about sessions, which the catalog does not hold: basic
// permissions, which a policy grants by who the person is (their groups,
// from Backstage's ownership claims).

/** Approve or deny someone else's session, cancel an approval, and watch it read-only. */
export const breakglassApprovePermission = createPermission({
  name: 'breakglass.session.approve',
  attributes: { action: 'update' },
});

/** End someone else's session (one's own can always be ended: ending never widens access). */
export const breakglassEndPermission = createPermission({
  name: 'breakglass.session.end',
  attributes: { action: 'update' },
});

/** Review someone else's ended session. */
export const breakglassReviewPermission = createPermission({
  name: 'breakglass.session.review',
  attributes: { action: 'update' },
});

/** Play the recording of a session that could read other processes' memory and files. */
export const breakglassViewSensitivePermission = createPermission({
  name: 'breakglass.recording.viewSensitive',
  attributes: { action: 'read' },
});

/** Every break-glass permission, for the backend's permission registry. */
export const breakglassPermissions = [
  breakglassRequestPermission,
  breakglassBreakGlassPermission,
  breakglassApprovePermission,
  breakglassEndPermission,
  breakglassReviewPermission,
  breakglassViewSensitivePermission,
];
