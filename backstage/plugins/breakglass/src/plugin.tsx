import {
  ApiBlueprint,
  PageBlueprint,
  configApiRef,
  createApiRef,
  createFrontendPlugin,
  discoveryApiRef,
  fetchApiRef,
  identityApiRef,
  oauthRequestApiRef,
  BackstageIdentityApi,
  OpenIdConnectApi,
  ProfileInfoApi,
  SessionApi,
  OverridableFrontendPlugin,
  RouteRef,
} from '@backstage/frontend-plugin-api';
import { OAuth2 } from '@backstage/core-app-api';
import { EntityContentBlueprint } from '@backstage/plugin-catalog-react/alpha';
import LockOpenIcon from '@material-ui/icons/LockOpen';
import { BackstageTransport, BreakglassClient, breakglassApiRef } from './api';
import { rootRouteRef } from './routes';

export { rootRouteRef };

/**
 * Sign-in at the organisation's issuer (Backstage's OIDC provider): the
 * app's sign-in page uses it, and the plugin takes the person's own ID
 * token from it for the relay.
 */
export const breakglassAuthApiRef = createApiRef<OpenIdConnectApi & ProfileInfoApi & BackstageIdentityApi & SessionApi>().with({
  id: 'plugin.breakglass.auth',
  pluginId: 'breakglass',
});

const authApi = ApiBlueprint.make({
  name: 'auth',
  params: defineParams =>
    defineParams({
      api: breakglassAuthApiRef,
      deps: { discoveryApi: discoveryApiRef, oauthRequestApi: oauthRequestApiRef, configApi: configApiRef },
      factory: ({ discoveryApi, oauthRequestApi, configApi }) =>
        OAuth2.create({
          configApi,
          discoveryApi,
          oauthRequestApi,
          provider: { id: configApi.getOptionalString('breakglass.authProvider') ?? 'oidc', title: 'Your organisation', icon: () => null },
          environment: configApi.getOptionalString('auth.environment'),
          defaultScopes: ['openid', 'profile', 'email', 'groups', 'offline_access'],
        }),
    }),
});

const clientApi = ApiBlueprint.make({
  params: defineParams =>
    defineParams({
      api: breakglassApiRef,
      deps: { discoveryApi: discoveryApiRef, fetchApi: fetchApiRef, identityApi: identityApiRef, authApi: breakglassAuthApiRef },
      factory: deps => new BreakglassClient(new BackstageTransport(deps)),
    }),
});

// A tab on every component the Kubernetes plugin knows where to find.
const entityTab = EntityContentBlueprint.make({
  params: {
    path: 'break-glass',
    title: 'Break glass',
    filter: entity => Boolean(entity.metadata.annotations?.['backstage.io/kubernetes-namespace']),
    loader: () => import('./components/EntityTab').then(m => <m.EntityTab />),
  },
});

const page = PageBlueprint.make({
  params: {
    path: '/break-glass',
    title: 'Break glass',
    // With an icon, the page is the sidebar's Break glass entry.
    icon: <LockOpenIcon />,
    routeRef: rootRouteRef,
    loader: () => import('./components/BreakglassPage').then(m => <m.BreakglassPage />),
  },
});

/**
 * Tower's break-glass plugin for Backstage's frontend system.
 *
 * @public
 */
// Typed by hand: the inferred type names a package of Backstage's own that
// a declaration file cannot refer to.
export const breakglassPlugin: OverridableFrontendPlugin<{ root: RouteRef<undefined> }> = createFrontendPlugin({
  pluginId: 'breakglass',
  routes: { root: rootRouteRef },
  extensions: [authApi, clientApi, entityTab, page],
});
