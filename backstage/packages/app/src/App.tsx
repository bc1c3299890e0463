import { createApp } from '@backstage/frontend-defaults';
import { createFrontendModule, PageBlueprint } from '@backstage/frontend-plugin-api';
import { SignInPageBlueprint } from '@backstage/plugin-app-react';
import { SignInPage } from '@backstage/core-components';
import catalogPlugin from '@backstage/plugin-catalog/alpha';
import notificationsPlugin from '@backstage/plugin-notifications/alpha';
import signalsPlugin from '@backstage/plugin-signals/alpha';
import userSettingsPlugin from '@backstage/plugin-user-settings/alpha';
import breakglassPlugin, { breakglassAuthApiRef } from '@tower-dev/backstage-plugin-breakglass';

// People sign in at the organisation's issuer (the demo issuer here),
// through the break-glass plugin's sign-in API: the ID token it keeps is
// the one the relay is given. Not auto: its popup, opened on load, is one
// a browser blocks without a click, and a click on "Sign in" beside it
// opens the same window again, so the sign-in form it showed is replaced
// under the person's click.
const signIn = SignInPageBlueprint.make({
  params: {
    loader: async () => props => (
      <SignInPage
        {...props}
        provider={{ id: 'oidc', title: 'Demo issuer', message: 'Sign in at the organisation\u2019s issuer', apiRef: breakglassAuthApiRef }}
      />
    ),
  },
});

// The first page after sign-in.
const home = PageBlueprint.make({
  name: 'home',
  params: { path: '/', title: 'Home', noHeader: true, loader: () => import('./Home').then(m => <m.Home />) },
});

export default createApp({
  features: [
    catalogPlugin,
    notificationsPlugin,
    signalsPlugin,
    userSettingsPlugin,
    breakglassPlugin,
    createFrontendModule({ pluginId: 'app', extensions: [signIn, home] }),
  ],
});
