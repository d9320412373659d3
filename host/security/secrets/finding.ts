/**
 * What the secret scanner reports and the interface its callers (the message, service and bash policies,
 * `carapace secrets scan`, log redaction) depend on. A leaf: detectors and callers import it, it imports
 * nothing.
 */

/** One secret found in a text. Never carries the secret itself, not even masked. */
export interface Finding {
  /**
   * The detector that found it, `<family>/<kind>`: `github/pat-classic`, `aws/access-key-id`,
   * `keyword/password`, `url/credentials`, `private-key/block`, `held-secret/<encoding>`, …
   * A secret found inside a decoded blob carries the blob's encoding first: `base64/github/pat-classic`.
   * `scanner/error` means the detectors failed, so the whole text counts as a finding.
   */
  rule: string;
  /** What was found, for a person deciding whether to approve; never the value. */
  message: string;
  /** UTF-16 offsets into the scanned text, end exclusive. */
  start: number;
  end: number;
}

export interface SecretScanner {
  /** Every finding, ordered by start. Asynchronous for callers' sake; the work is synchronous. */
  scan(text: string): Promise<Finding[]>;
  /** Replaces held secrets (raw and in the encodings `scan` knows exactly) with `[REDACTED]`. */
  redact(text: string): string;
}

/** A detector's raw result before the scanner ranks and merges overlapping findings. */
export interface Hit {
  rule: string;
  message: string;
  start: number;
  end: number;
}
