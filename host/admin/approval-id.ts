import crypto from 'node:crypto';

/** Letters and digits that cannot be misread for one another: no 0/o, 1/l/i. Lower case, as phones type it. */
export const APPROVAL_ID_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';
export const APPROVAL_ID_LENGTH = 6;
const DIGITS = /[2-9]/;

/**
 * The shape of an id the owner types. At least one digit is required (and every id drawn has one), so that
 * ordinary English such as "deny access" or "approve update" is never taken for a command.
 */
export const APPROVAL_ID_PATTERN = new RegExp(
  `^(?=.*[2-9])[${APPROVAL_ID_ALPHABET}]{${APPROVAL_ID_LENGTH}}$`,
);

/** Draws a random id. The id is not a secret (only the owner in the admin chat can use it), just short. */
export function newApprovalId(randomInt: (max: number) => number = crypto.randomInt): string {
  for (;;) {
    let id = '';
    for (let i = 0; i < APPROVAL_ID_LENGTH; i++)
      id += APPROVAL_ID_ALPHABET[randomInt(APPROVAL_ID_ALPHABET.length)];
    if (DIGITS.test(id)) return id;
  }
}

/** Lower-cases and trims what the owner typed; undefined when it cannot be an approval id at all. */
export function normalizeApprovalId(text: string): string | undefined {
  const id = text.trim().toLowerCase();
  return APPROVAL_ID_PATTERN.test(id) ? id : undefined;
}
