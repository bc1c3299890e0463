// The Backstage backend that make dev --backstage and the tests run in front
// of the local plane: the catalog (the demo people, their groups and the
// shop component), the app's built frontend, the Kubernetes plugin's
// backend (a read-only account: the tab lists the component's pods), sign-in at the local OIDC
// issuer, permissions with the break-glass policy, notifications, and
// Tower's break-glass plugin.
import { createBackend } from '@backstage/backend-defaults';
import { breakglassPolicyModule } from './policy';

const backend = createBackend();
backend.add(import('@backstage/plugin-app-backend'));
backend.add(import('@backstage/plugin-auth-backend'));
backend.add(import('@backstage/plugin-auth-backend-module-oidc-provider'));
backend.add(import('@backstage/plugin-catalog-backend'));
backend.add(import('@backstage/plugin-kubernetes-backend'));
backend.add(import('@backstage/plugin-permission-backend'));
backend.add(breakglassPolicyModule);
backend.add(import('@backstage/plugin-notifications-backend'));
backend.add(import('@backstage/plugin-signals-backend'));
backend.add(import('@tower-dev/backstage-plugin-breakglass-backend'));
backend.start();
