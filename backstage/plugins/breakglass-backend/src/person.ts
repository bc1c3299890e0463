import { Request } from 'express';
import { BackstageCredentials, BackstageUserInfo, BackstageUserPrincipal } from '@backstage/backend-plugin-api';
import { Entity } from '@backstage/catalog-model';
import { breakglassIdentityHeader } from '@tower-dev/backstage-plugin-breakglass-common';
import type { RouterOptions } from './options';
import type { Session } from '@tower-dev/breakglass-portal';

/** A refusal, answered as the relay answers: status, reason and message. */
export class RefusedError extends Error {
  constructor(readonly status: number, readonly reason: string, message: string) {
    super(message);
  }
}

/** The person behind a call: to Backstage and, by their ID token, to the relay. */
export interface Person {
  credentials: BackstageCredentials<BackstageUserPrincipal>;
  user: BackstageUserInfo;
  idToken: string;
  /** The relay's name for them: the token's issuer and subject. */
  id: string;
  /** The name the relay shows for them (the token's email). */
  name: string;
  /** Whether they asked for s (the relay decides again). */
  asked(s: Session): boolean;
}

/** People finds who is calling and checks that both identities agree. */
export class People {
  constructor(private readonly o: RouterOptions) {}

  async of(req: Request): Promise<Person> {
    const credentials = await this.o.httpAuth.credentials(req, { allow: ['user'] });
    return this.fromToken(credentials, req.header(breakglassIdentityHeader));
  }

  async fromToken(credentials: BackstageCredentials<BackstageUserPrincipal>, idToken: string | undefined): Promise<Person> {
    if (!idToken) {
      throw new RefusedError(401, 'Unauthenticated', `no ${breakglassIdentityHeader}: the page sends the ID token its sign-in got from the issuer`);
    }
    const claims = decodeClaims(idToken);
    const user = await this.o.userInfo.getUserInfo(credentials);
    // The first layer judges the Backstage user; the relay, the token's
    // person. They must be one person, or Backstage's permissions would be
    // checked for one and the relay act for another.
    const entity = await this.entity(user.userEntityRef);
    const email = (entity?.spec?.profile as { email?: string } | undefined)?.email;
    // Only an address the issuer verified: an unverified one could be set
    // to a catalog user's.
    if (claims.email_verified !== true && claims.email_verified !== 'true') {
      throw new RefusedError(403, 'IdentityMismatch', 'the identity token\'s email is not verified by the issuer');
    }
    if (!email || typeof claims.email !== 'string' || email.toLowerCase() !== claims.email.toLowerCase()) {
      throw new RefusedError(403, 'IdentityMismatch',
        `the identity token names ${String(claims.email)}, but ${user.userEntityRef} is ${email ?? 'without an email in the catalog'}`);
    }
    const id = `${claims.iss}#${claims.sub}`;
    return {
      credentials, user, idToken, id, name: claims.email,
      asked: s => (s.spec.requesterID ? s.spec.requesterID === id : s.spec.requester === claims.email),
    };
  }

  /** entity looks ref up as credentials (default: the plugin itself). */
  async entity(ref: string, credentials?: BackstageCredentials): Promise<Entity | undefined> {
    return this.o.catalog.getEntityByRef(ref, { credentials: credentials ?? (await this.o.auth.getOwnServiceCredentials()) });
  }
}

// decodeClaims reads a JWT's claims without checking its signature: only to
// match the person against Backstage's user; the relay verifies it.
function decodeClaims(token: string): Record<string, unknown> {
  const parts = token.split('.');
  try {
    if (parts.length !== 3) throw new Error(`${parts.length} parts, not 3`);
    const claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
    if (typeof claims !== 'object' || claims === null || typeof claims.iss !== 'string' || typeof claims.sub !== 'string') {
      throw new Error('no issuer and subject');
    }
    return claims;
  } catch (e) {
    throw new RefusedError(401, 'Unauthenticated', `the identity token is not a JWT: ${(e as Error).message}`);
  }
}
