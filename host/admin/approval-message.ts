/** What the admin chat is shown about one request. Every text field comes from an untrusted run. */
export interface ApprovalNotice {
  id: string;
  runId: number | null;
  groupId: string;
  operation: string;
  reason: string;
  /** Canonical JSON of the parameters, as stored and hashed. */
  paramsJson: string;
  expiresAt: number;
  timeoutMs: number;
}

export interface PendingItem {
  id: string;
  runId: number | null;
  groupId: string;
  operation: string;
  reason: string;
  expiresInMs: number;
}

export interface DisplayLimits {
  /** Longer strings (values and keys) are shown as their start and end with a count of what is hidden. */
  maxValueChars: number;
  /** The whole parameter block is cut after this many characters, with a note. */
  maxParamsChars: number;
  maxReasonChars: number;
}

// Values are shown whole up to what one chat message can carry; anything longer is never put to the owner.
export const DEFAULT_DISPLAY_LIMITS: DisplayLimits = {
  maxValueChars: 3000,
  maxParamsChars: 3000,
  maxReasonChars: 500,
};

/**
 * The parameters cannot be shown in full. The owner must never approve bytes they have not seen (a long
 * command can hide `; curl … | sh` in a shortened middle), so such a request is refused without asking.
 */
export class ParamsNotShowableError extends Error {
  constructor(readonly chars: number) {
    super(`its parameters (${chars} characters) are too long to show in full in the admin chat`);
    this.name = 'ParamsNotShowableError';
  }
}

// Invisible and direction-changing characters could make the owner read something other than what runs
// (a right-to-left override reversing a URL, a zero-width space splitting a word); they are shown escaped.
const INVISIBLE = /[\p{Cf}\u2028\u2029]/gu;
const CONTROL_OR_INVISIBLE = /[\p{Cc}\p{Cf}\u2028\u2029]/gu;
const escapeChar = (c: string) => `\\u${(c.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`;

/** One line, quoted, with control and invisible characters escaped and the length capped. */
export function quoteUntrusted(text: string, maxChars: number): string {
  const chars = Array.from(text);
  const shown = chars.length > maxChars ? `${chars.slice(0, maxChars).join('')}…` : text;
  const quoted = JSON.stringify(shown).replace(CONTROL_OR_INVISIBLE, escapeChar);
  return chars.length > maxChars
    ? `${quoted} (${chars.length - maxChars} more characters not shown)`
    : quoted;
}

interface RenderState {
  limits: DisplayLimits;
  redact: (s: string) => string;
  shortened: number;
}

function shortenString(raw: string, st: RenderState): string {
  // Redact before shortening: a held secret cut in two would no longer match the redactor.
  const s = st.redact(raw);
  const chars = Array.from(s);
  if (chars.length <= st.limits.maxValueChars) return JSON.stringify(s);
  st.shortened++;
  const tail = Math.floor(st.limits.maxValueChars / 3);
  const head = st.limits.maxValueChars - tail;
  const hidden = chars.length - head - tail;
  return `${JSON.stringify(chars.slice(0, head).join(''))} … [${hidden} characters hidden] … ${JSON.stringify(
    chars.slice(chars.length - tail).join(''),
  )}`;
}

function render(v: unknown, indent: string, st: RenderState): string {
  if (typeof v === 'string') return shortenString(v, st);
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  const inner = `${indent}  `;
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    return `[\n${v.map((x) => inner + render(x, inner, st)).join(',\n')}\n${indent}]`;
  }
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length === 0) return '{}';
  return `{\n${entries
    .map(([k, x]) => `${inner}${shortenString(k, st)}: ${render(x, inner, st)}`)
    .join(',\n')}\n${indent}}`;
}

/** Pretty JSON of the parameters with long values shortened visibly, and notes saying what was left out. */
export function renderParams(
  paramsJson: string,
  limits: DisplayLimits = DEFAULT_DISPLAY_LIMITS,
  redact: (s: string) => string = (s) => s,
): { text: string; notes: string[] } {
  const st: RenderState = { limits, redact, shortened: 0 };
  // JSON.stringify already escaped control characters inside strings; only invisible ones remain.
  let text = render(JSON.parse(paramsJson) as unknown, '', st).replace(INVISIBLE, escapeChar);
  const notes: string[] = [];
  if (st.shortened > 0) {
    notes.push(
      `${st.shortened} long value${st.shortened === 1 ? ' is' : 's are'} shortened above (start … end); ` +
        'approving allows the full value.',
    );
  }
  if (text.length > limits.maxParamsChars) {
    const cutAt = text.lastIndexOf('\n', limits.maxParamsChars);
    const shown = cutAt > 0 ? cutAt : limits.maxParamsChars;
    notes.push(
      `the parameters are cut after ${shown} of ${text.length} characters; approving allows all of them.`,
    );
    text = `${text.slice(0, shown)}\n… [cut]`;
  }
  return { text, notes };
}

export function formatDuration(ms: number): string {
  if (ms < 60_000) return `${Math.max(0, Math.ceil(ms / 1000))} s`;
  return `${Math.round(ms / 60_000)} min`;
}

export function formatInstant(epochMs: number): string {
  return new Date(epochMs).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

const describeAsker = (groupId: string, runId: number | null) =>
  `group ${quoteUntrusted(groupId, 100)}${runId === null ? '' : `, run ${runId}`}`;

/**
 * The admin-chat message for one request: id, operation, who asked and why, the exact parameters and how
 * to answer. `redact` runs over the finished text, so a held secret never reaches the chat; when it changed
 * something the owner is told, because a request carrying a secret is itself worth a second look.
 */
export function formatApprovalRequest(
  n: ApprovalNotice,
  redact: (s: string) => string,
  limits: DisplayLimits = DEFAULT_DISPLAY_LIMITS,
): string {
  let hidSecret = false;
  // Every piece is redacted before it is shortened or quoted (either could break a secret apart and hide
  // it from an exact-match redactor), and the finished text once more.
  const r = (s: string) => {
    const out = redact(s);
    if (out !== s) hidSecret = true;
    return out;
  };
  const params = renderParams(n.paramsJson, limits, r);
  if (params.notes.length > 0) throw new ParamsNotShowableError(n.paramsJson.length);
  const operation = quoteUntrusted(r(n.operation), 100);
  const asker = describeAsker(r(n.groupId), n.runId);
  const reason = quoteUntrusted(r(n.reason), limits.maxReasonChars);
  const build = (extraNotes: string[]) =>
    [
      `Approval needed: ${n.id}`,
      `Operation: ${operation}`,
      `Asked by: ${asker}`,
      `Reason given: ${reason}`,
      'Parameters (exactly what will run):',
      params.text,
      ...[...params.notes, ...extraNotes].map((note) => `Note: ${note}`),
      `Answer "approve ${n.id}" or "deny ${n.id}" within ${formatDuration(n.timeoutMs)} ` +
        `(until ${formatInstant(n.expiresAt)}). No answer counts as deny.`,
    ].join('\n');
  const text = r(build([]));
  if (!hidSecret) return text;
  return redact(build(['secrets the host holds are shown as [REDACTED]; this request contains one.']));
}

export function formatPendingList(items: PendingItem[], redact: (s: string) => string): string {
  if (items.length === 0) return 'No approval requests are waiting.';
  const lines = items.map(
    (p) =>
      `- ${p.id}: ${quoteUntrusted(redact(p.operation), 100)} for ${describeAsker(redact(p.groupId), p.runId)}, ` +
      `expires in ${formatDuration(p.expiresInMs)}. Reason: ${quoteUntrusted(redact(p.reason), 120)}`,
  );
  const head = `${items.length} approval request${items.length === 1 ? '' : 's'} waiting:`;
  return redact([head, ...lines, 'Answer with "approve <id>" or "deny <id>".'].join('\n'));
}

/** The outbox key of an approval request in the admin chats (other chats get `<key>@<channel>:<chat>`). */
export function approvalNoticeKey(id: string): string {
  return `approval:${id}`;
}

/** The buttons under an approval request: each press arrives as the same text command from the presser. */
export function approvalActions(id: string): { label: string; command: string }[] {
  return [
    { label: 'Approve', command: `approve ${id}` },
    { label: 'Deny', command: `deny ${id}` },
  ];
}
