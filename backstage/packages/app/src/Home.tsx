import { Content, InfoCard, Link } from '@backstage/core-components';
import Typography from '@material-ui/core/Typography';

/**
 * The demo's landing page: where people start after signing in, and what
 * Tower's break-glass pages are for.
 */
export function Home() {
  return (
    <Content>
      <Typography variant="h4" component="h1" gutterBottom>
        Tower: break-glass debug access
      </Typography>
      <InfoCard title="Look inside a pod without exec">
        <Typography paragraph>
          Ask for a short debug session on one of your component's pods: another person approves it, the cluster holds it to a
          signed, non-root, read-only debug container, and every byte of its terminal is recorded.
        </Typography>
        <ul>
          <li>
            <Link underline="always" to="/catalog/default/component/shop/break-glass">The shop component's Break glass tab</Link>: ask for a session on
            one of its pods, or break the glass.
          </li>
          <li>
            <Link underline="always" to="/break-glass">Break glass</Link>: requests waiting for your decision, reviews due, running sessions you may
            watch, your own sessions, and the recordings.
          </li>
          <li>
            <Link underline="always" to="/catalog">The catalog</Link>, <Link underline="always" to="/notifications">your notifications</Link> and{' '}
            <Link underline="always" to="/settings">your settings</Link> (sign out there).
          </li>
        </ul>
      </InfoCard>
    </Content>
  );
}
