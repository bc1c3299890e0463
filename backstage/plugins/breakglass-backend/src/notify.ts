import { LoggerService } from '@backstage/backend-plugin-api';
import type { RouterOptions } from './options';
import type { Session } from './relay';

/**
 * Notifier tells people in Backstage's notifications, each linking to the
 * page in Backstage where they act; the relay's own webhook goes on beside
 * it. A notification that cannot be sent is logged, never a failed call.
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

  async requested(s: Session, entityRef: string) {
    if (s.spec.glassBroken) {
      await this.send(this.reviewers, s, `${s.spec.requester} broke the glass on ${s.namespace}/${s.spec.targetPod}`, 'review', 'high');
      return;
    }
    await this.send(this.approvers, s, `${s.spec.requester} asks for a debug session on ${s.namespace}/${s.spec.targetPod} (${entityRef})`, 'approve', 'high');
  }

  async decided(s: Session, decision: 'approve' | 'deny') {
    const requester = await this.userByEmail(s.spec.requester);
    if (!requester) return;
    await this.send([requester], s, `Your debug session on ${s.namespace}/${s.spec.targetPod} was ${decision === 'approve' ? 'approved' : 'denied'}`);
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

  private async send(entityRef: string[], s: Session, title: string, view?: 'approve' | 'review', severity?: 'high') {
    if (entityRef.length === 0) return;
    try {
      // The reason is the requester's words, shown to approvers as on the
      // relay's page; nothing secret goes into a notification.
      await this.o.notifications.send({
        recipients: { type: 'entity', entityRef },
        payload: { title, description: s.spec.reason, link: this.link(s, view), severity, topic: 'breakglass' },
      });
    } catch (e) {
      this.logger.warn(`break-glass notification "${title}" not sent: ${e}`);
    }
  }
}
