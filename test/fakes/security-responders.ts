/**
 * Scripting for the security end-to-end tests. The fake provider answers two kinds of callers: the agents
 * in their containers (scripted tool calls, then a reply that quotes every tool result) and the host's Cop
 * (one chat completion with a fixed system prompt, answered with a JSON verdict the test chooses). The
 * owner's side is scripted here too: reading approval requests from the admin chat's outbox and the audit
 * rows a turn left behind.
 */
import type { E2eHost } from '../e2e/e2e-harness.ts';
import { eventually } from '../e2e/e2e-harness.ts';
import { copSystemPrompt, type CopReviewKind } from '../../host/security/cop/cop-prompts.ts';
import type { AuditRow } from '../../host/store/audit-store.ts';
import { byGroup, messagesOf, turnResponder } from './e2e-responders.ts';
import {
  reply,
  type FakeRequest,
  type Responder,
  type ScriptedResponse,
  type ToolCallSpec,
} from './fake-provider-script.ts';

const COP_KINDS: readonly CopReviewKind[] = ['host_mutation', 'tainted_write', 'bash_command'];

/** What the host showed the Cop in one review request. */
export interface CopReview {
  kind: CopReviewKind;
  /** `bash`, `service.web_fetch`, … */
  operation: string;
  params: unknown;
  /** The taint facts the host stated above the data. */
  taint: { corruption: boolean; secret: boolean };
  /** The whole user message, for assertions on what the Cop saw. */
  text: string;
}

export interface CopVerdictScript {
  flagged: boolean;
  reason: string;
}

/** The review a Cop request carries, or undefined when the request is not the Cop's. */
export function copReviewOf(request: FakeRequest): CopReview | undefined {
  const messages = messagesOf(request.body);
  const system = messages.find((m) => m.role === 'system')?.content;
  const kind = COP_KINDS.find((k) => system === copSystemPrompt(k));
  const user = messages.find((m) => m.role === 'user')?.content;
  if (kind === undefined || typeof user !== 'string') return undefined;
  const marker = /^Marker for this request: (\S+)$/m.exec(user)?.[1];
  if (!marker) throw new Error(`a Cop request without a marker line:\n${user}`);
  const begin = user.indexOf(`BEGIN UNTRUSTED DATA ${marker}\n`);
  const end = user.indexOf(`\nEND UNTRUSTED DATA ${marker}`);
  if (begin < 0 || end < begin) throw new Error(`a Cop request without its data block:\n${user}`);
  const data = JSON.parse(user.slice(begin + `BEGIN UNTRUSTED DATA ${marker}\n`.length, end)) as {
    operation: string;
    params: unknown;
  };
  const fact = (label: RegExp) => {
    const line = user.split('\n').find((l) => label.test(l));
    if (!line) throw new Error(`a Cop request without the taint fact ${String(label)}`);
    return line.trimEnd().endsWith(': yes');
  };
  return {
    kind,
    operation: data.operation,
    params: data.params,
    taint: { corruption: fact(/has read untrusted content/), secret: fact(/has read secret data/) },
    text: user,
  };
}

/** Every Cop review the fake provider received (from index `from` on), oldest first. */
export function copReviews(requests: readonly FakeRequest[], from = 0): CopReview[] {
  return requests
    .slice(from)
    .map(copReviewOf)
    .filter((r): r is CopReview => r !== undefined);
}

/** The Cop flags exactly the actions whose parameters contain `needle` (e.g. a word in a file name). */
export function flagWhenContains(needle: string): (review: CopReview) => CopVerdictScript {
  return (review) =>
    JSON.stringify(review.params).includes(needle)
      ? { flagged: true, reason: `scripted flag: the parameters contain "${needle}"` }
      : { flagged: false, reason: 'scripted pass: an ordinary action' };
}

/**
 * Answers Cop requests with `cop`'s verdict (as the JSON object the Cop expects) and every other request
 * by the group it was made for.
 */
export function securityResponder(
  agents: Record<string, Responder>,
  cop: (review: CopReview) => CopVerdictScript = flagWhenContains('FLAGGED'),
): Responder {
  const agent = byGroup(agents);
  return (request) => {
    const review = copReviewOf(request);
    if (review) return reply.text(JSON.stringify(cop(review)));
    return agent(request);
  };
}

/** Tool results joined as the agents' replies show them. */
export const RESULT_SEPARATOR = '\n--\n';

/**
 * One turn: the model calls `calls` (all in one answer; the agent runs them in order), then replies
 * with every tool result, so the reply that comes out of the CLI shows what each call got back.
 */
export function runTools(calls: ToolCallSpec[]): Responder {
  return turnResponder(
    (): ScriptedResponse => reply.toolCalls(calls),
    (t) => reply.text(t.toolResults.join(RESULT_SEPARATOR)),
  );
}

export const bash = (command: string): ToolCallSpec => ({ name: 'bash', arguments: { command } });

/** The tool results in a reply made by `runTools`. */
export function resultsOf(stdout: string): string[] {
  return stdout.replace(/\n$/, '').split(RESULT_SEPARATOR);
}

type HostView = Pick<E2eHost, 'host' | 'outbox' | 'runs' | 'send'>;

/**
 * The newest run's own reply in `group` (its last outbox row). In the admin chat the CLI also prints the
 * approval requests and the answers to the owner's commands, which share that chat.
 */
export function runReply(h: HostView, group: string): string {
  const runId = h.runs(group).at(-1)?.id;
  const row = h
    .outbox(group)
    .filter((r) => r.runId === runId)
    .at(-1);
  if (!row) throw new Error(`the newest run of ${group} (${runId}) has no reply`);
  return row.text;
}

/** The id of the newest audit row (0 when none): rows a turn writes have larger ids. */
export function auditMark(h: HostView): number {
  return h.host.store.audit.tail(1)[0]?.id ?? 0;
}

/** Audit rows written after `mark`, oldest first. */
/**
 * Whether a row is an ordinary message send nobody had to review (allowed with no approver): every reply
 * is a row, which tests about other decisions leave out.
 */
export function unaskedSend(r: AuditRow): boolean {
  return r.operation === 'message.send' && r.decision === 'allowed' && r.approver === null;
}

export function auditSince(h: HostView, mark: number): AuditRow[] {
  return h.host.store.audit.tail(10_000).filter((row) => row.id > mark);
}

/** A row's details, parsed. */
export function detailsOf(row: AuditRow): Record<string, unknown> {
  return row.details === null ? {} : (JSON.parse(row.details) as Record<string, unknown>);
}

/** An approval request as the owner sees it in the admin chat. */
export interface ApprovalNoticeSeen {
  id: string;
  text: string;
}

const NOTICE = /^Approval needed: ([a-z2-9]{6})\n/;

/** Approval requests posted to the admin chat (group main), oldest first. */
export function approvalNotices(h: HostView): ApprovalNoticeSeen[] {
  return h
    .outbox('main')
    .map((row) => ({ row, id: NOTICE.exec(row.text)?.[1] }))
    .filter((x): x is { row: (typeof x)['row']; id: string } => x.id !== undefined)
    .map(({ row, id }) => ({ id, text: row.text }));
}

/**
 * Waits for the next approval request in the admin chat that was not in `seen` (ids), and whose text
 * contains `contains` when given; returns it and adds its id to `seen`.
 */
export async function nextApproval(
  h: HostView,
  seen: Set<string>,
  contains?: string,
  timeoutMs = 45_000,
): Promise<ApprovalNoticeSeen> {
  const found = await eventually(
    `an approval request in the admin chat${contains ? ` about ${contains}` : ''}`,
    () =>
      approvalNotices(h).find(
        (n) => !seen.has(n.id) && (contains === undefined || n.text.includes(contains)),
      ),
    timeoutMs,
  );
  seen.add(found.id);
  return found;
}

/** What the admin chat was told after `afterOutboxId` (answers to the owner's commands, notices). */
export function adminChatAfter(h: HostView, afterOutboxId: number): string[] {
  return h
    .outbox('main')
    .filter((row) => row.id > afterOutboxId)
    .map((row) => row.text);
}

/** The id of the newest outbox row of the admin chat (0 when none). */
export function adminChatMark(h: HostView): number {
  return h.outbox('main').at(-1)?.id ?? 0;
}

/**
 * The owner sends `command` ("approve <id>", "deny <id>", …) to the admin chat through the CLI; resolves
 * with what the admin chat was told in answer (approval requests that arrive meanwhile are skipped).
 */
export async function ownerSays(h: HostView, command: string): Promise<string> {
  const before = adminChatMark(h);
  const res = await h.send('main', command);
  if (res.code !== 0) throw new Error(`carapace send "${command}" exited ${res.code}: ${res.stderr}`);
  return eventually(
    `the admin chat's answer to "${command}"`,
    () => adminChatAfter(h, before).filter((text) => !NOTICE.test(text))[0],
  );
}
