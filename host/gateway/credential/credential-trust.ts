import { TRUST_PROPERTIES, UNDECLARED_TRUST, type ServiceTrust } from '../../services/service-trust.ts';
import type { CredentialConfig } from './credential-config.ts';

/**
 * A credential's place in the trust matrix: the owner's declaration alone, whatever it leaves out
 * counting as `true` (fail closed), as for any service the owner declares.
 */
export function credentialTrust(credential: CredentialConfig): ServiceTrust {
  const trust = { ...UNDECLARED_TRUST };
  for (const property of TRUST_PROPERTIES) trust[property] = credential[property] ?? true;
  return trust;
}
