import { LoggerService } from '@backstage/backend-plugin-api';
import { minutes, notificationKinds, type NotificationKind, type Session } from '@tower-dev/breakglass-portal';
import type { RouterOptions } from './options';

/**
 * Notifier tells people in Backstage's notifications, each linking to the
 * page in Backstage where they act; the relay's own routes go on beside
 * it. The titles are the relay's (notify.Titles, through the portal's
 * vocabulary); the words under them are the person's who acted: the
 * requester's reason for a request or a broken glass, the approver's
 * comment for an approval, the denier's reason for a denial. A
 * notification that cannot be sent is logged, never a failed call.
 */
export class Notifier {
  private readonly approvers: string[];
  private readonly reviewers: string[];

  constructor(private readonly o: RouterOptions, private readonly logger: LoggerService) {
    this.approvers = o.config.getOptionalStringArray('breakglass.notify.approvers') ?? [];
    this.reviewers = o.config.getOptionalStringArray('breakglass.notify.reviewers') ?? [];
  }

  /** link is the session's page in the plugin, with what to do there. */
  link(s: Session, view?: 'approve' | 'review') {
    const path = ['break-glass', 'sessions', s.cluster, s.namespace, s.name].map(encodeURIComponent).join('/');
    return `/${path}${view ? `?view=${view}` : ''}`;
  }

  private what(s: Session) {
    return `${s.spec.requester}, ${s.spec.mode} on ${s.namespace}/${s.spec.targetPod} (${s.cluster}), ${minutes(s.spec.duration)}`;
  }

  /** requested tells the approvers of a request, or, for a broken glass, the reviewers and the approvers. */
  async requested(s: Session, entityRef: string) {
    if (s.spec.glassBroken) {
      // Everyone is told of a broken glass: its reviewers to review it, its
      // approvers because nobody approved it.
      await this.send('glass.broken', [...new Set([...this.reviewers, ...this.approvers])], s, this.what(s), `Why: ${s.spec.reason}`, 'review', 'critical');
      return;
    }
    await this.send('request.new', this.approvers, s, `${this.what(s)}, from ${entityRef}`, `Why: ${s.spec.reason}`, 'approve', 'high');
  }

  /** decided tells the requester what was decided, in the decider's words. */
  async decided(s: Session, decision: 'approve' | 'deny') {
    const requester = await this.userByEmail(s.spec.requester);
    if (!requester) return;
    if (decision === 'deny') {
      const d = s.status.denial;
      await this.send('request.denied', [requester], s, `${d?.by ?? 'An approver'} denied ${this.what(s)}`, d?.reason ? `Why: ${d.reason}` : 'No reason given.');
      return;
    }
    const a = s.status.approval;
    await this.send('request.approved', [requester], s, `${a?.by ?? 'An approver'} approved ${this.what(s)}`, a?.comment ? `“${a.comment}”` : 'Start it from its page.');
  }

  private async userByEmail(email: string): Promise<string | undefined> {
    try {
      const { items } = await this.o.catalog.getEntities(
        { filter: { kind: 'user', 'spec.profile.email': email }, fields: ['kind', 'metadata.namespace', 'metadata.name'] },
        { credentials: await this.o.auth.getOwnServiceCredentials() },
      );
      const u = items[0];
      return u ? `user:${u.metadata.namespace ?? 'default'}/${u.metadata.name}` : undefined;
    } catch (e) {
      this.logger.warn(`break-glass notification: finding ${email} in the catalog: ${e}`);
      return undefined;
    }
  }

  private async send(kind: NotificationKind, entityRef: string[], s: Session, what: string, words: string, view?: 'approve' | 'review',
    severity?: 'high' | 'critical') {
    if (entityRef.length === 0) return;
    const title = `${notificationKinds[kind].label}: ${what}`;
    try {
      // Nothing secret goes into a notification: who, what, and the
      // person's own words, as on the session's page.
      await this.o.notifications.send({
        recipients: { type: 'entity', entityRef },
        payload: { title, description: words, link: this.link(s, view), severity, topic: 'breakglass' },
      });
    } catch (e) {
      this.logger.warn(`break-glass notification "${title}" not sent: ${e}`);
    }
  }
}
