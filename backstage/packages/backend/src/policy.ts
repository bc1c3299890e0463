import { coreServices, createBackendModule } from '@backstage/backend-plugin-api';
import { AuthorizeResult, PolicyDecision, isPermission } from '@backstage/plugin-permission-common';
import { PermissionPolicy, PolicyQuery, PolicyQueryUser } from '@backstage/plugin-permission-node';
import { policyExtensionPoint } from '@backstage/plugin-permission-node/alpha';
import { catalogConditions, createCatalogConditionalDecision } from '@backstage/plugin-catalog-backend/alpha';
import {
  breakglassApprovePermission,
  breakglassBreakGlassPermission,
  breakglassEndPermission,
  breakglassRequestPermission,
  breakglassReviewPermission,
  breakglassViewSensitivePermission,
} from '@tower-dev/backstage-plugin-breakglass-common';

/**
 * The demo's break-glass policy, as a Backstage admin would write one: an
 * entity's owners may ask for sessions on it and break its glass (decided
 * by the catalog, against the entity); the SRE group approves, ends and
 * reviews; security reviews and plays sensitive recordings; the
 * Kubernetes plugin's proxy is refused to all. Everything else in
 * Backstage is allowed. `breakglass.devPolicy: allow-all` allows
 * everything, to show the relay refusing what the first layer let through.
 */
export class BreakglassPolicy implements PermissionPolicy {
  constructor(private readonly allowAll: boolean) {}

  async handle(request: PolicyQuery, user?: PolicyQueryUser): Promise<PolicyDecision> {
    if (this.allowAll) return { result: AuthorizeResult.ALLOW };
    const p = request.permission;
    const groups = user?.info.ownershipEntityRefs ?? [];
    const member = (...g: string[]) => (g.some(x => groups.includes(x)) ? AuthorizeResult.ALLOW : AuthorizeResult.DENY);
    if (isPermission(p, breakglassRequestPermission) || isPermission(p, breakglassBreakGlassPermission)) {
      return createCatalogConditionalDecision(p, catalogConditions.isEntityOwner({ claims: groups }));
    }
    if (isPermission(p, breakglassApprovePermission)) return { result: member('group:default/sre', 'group:default/shop-leads') };
    if (isPermission(p, breakglassEndPermission)) return { result: member('group:default/sre') };
    if (isPermission(p, breakglassReviewPermission)) return { result: member('group:default/sre', 'group:default/security', 'group:default/shop-leads') };
    // The Kubernetes plugin's proxy would hand its account to the browser
    // (its pod terminal is exec): here it only lists pods.
    if (p.name === 'kubernetes.proxy') return { result: AuthorizeResult.DENY };
    if (isPermission(p, breakglassViewSensitivePermission)) return { result: member('group:default/sre', 'group:default/security') };
    return { result: AuthorizeResult.ALLOW };
  }
}

export const breakglassPolicyModule = createBackendModule({
  pluginId: 'permission',
  moduleId: 'breakglass-policy',
  register(reg) {
    reg.registerInit({
      deps: { policy: policyExtensionPoint, config: coreServices.rootConfig },
      async init({ policy, config }) {
        policy.setPolicy(new BreakglassPolicy(config.getOptionalString('breakglass.devPolicy') === 'allow-all'));
      },
    });
  },
});
