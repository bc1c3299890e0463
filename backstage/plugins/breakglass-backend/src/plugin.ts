import { coreServices, createBackendPlugin } from '@backstage/backend-plugin-api';
import { catalogServiceRef } from '@backstage/plugin-catalog-node';
import { notificationService } from '@backstage/plugin-notifications-node';
import { breakglassPermissions } from '@tower-dev/backstage-plugin-breakglass-common';
import { createRouter } from './router';

/**
 * The break-glass backend plugin: Backstage's permissions as the first
 * layer, then every call forwarded to the relay on the person's own ID
 * token, which the relay verifies against the issuer itself.
 *
 * @public
 */
export const breakglassPlugin = createBackendPlugin({
  pluginId: 'breakglass',
  register(env) {
    env.registerInit({
      deps: {
        config: coreServices.rootConfig,
        logger: coreServices.logger,
        httpRouter: coreServices.httpRouter,
        httpAuth: coreServices.httpAuth,
        auth: coreServices.auth,
        userInfo: coreServices.userInfo,
        discovery: coreServices.discovery,
        permissions: coreServices.permissions,
        permissionsRegistry: coreServices.permissionsRegistry,
        catalog: catalogServiceRef,
        notifications: notificationService,
      },
      async init(deps) {
        deps.permissionsRegistry.addPermissions(breakglassPermissions);
        deps.httpRouter.use(await createRouter(deps));
      },
    });
  },
});
