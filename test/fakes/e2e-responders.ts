/**
 * Model stand-ins for end-to-end tests. The agent sends OpenAI chat-completions bodies (system prompt, the
 * stored conversation, tool results); these helpers read such a body the way a model would and script
 * what it answers, turn by turn and step by step within a turn.
 */
import { newestChatText } from './demo-responder.ts';
import { reply, type FakeRequest, type Responder, type ScriptedResponse } from './fake-provider-script.ts';

interface WireToolCall {
  id?: string;
  function?: { name?: string; arguments?: string };
}

/** One message of a chat-completions body, as the agent sends it. */
export interface WireMessage {
  role: string;
  content?: unknown;
  tool_calls?: WireToolCall[];
  tool_call_id?: string;
}

export function messagesOf(body: unknown): WireMessage[] {
  const messages = (body as { messages?: unknown } | undefined)?.messages;
  return Array.isArray(messages) ? (messages as WireMessage[]) : [];
}

/** The group a request was made for, from the system prompt's `(group id "…")`; undefined for others. */
export function groupIdOf(body: unknown): string | undefined {
  const system = messagesOf(body).find((m) => m.role === 'system');
  if (typeof system?.content !== 'string') return undefined;
  return /\(group id "([^"]+)"\)/.exec(system.content)?.[1];
}

/** Every chat message text the agent showed the model in this request, oldest first. */
export function chatTextsOf(body: unknown): string[] {
  const texts: string[] = [];
  for (const m of messagesOf(body)) {
    if (m.role !== 'user' || typeof m.content !== 'string') continue;
    for (const line of m.content.split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        const parsed = JSON.parse(line) as { text?: unknown };
        if (typeof parsed.text === 'string') texts.push(parsed.text);
      } catch {
        // a line of chat text that merely starts with "{" is not a message record
      }
    }
  }
  return texts;
}

/** What the model is asked in one request, seen from the newest user turn. */
export interface TurnView {
  request: FakeRequest;
  group: string | undefined;
  /** The newest chat message's text. */
  text: string;
  /** How many model answers this turn already has (0 for its first call). */
  step: number;
  /** Tool results of this turn, in order. */
  toolResults: string[];
}

export function turnOf(request: FakeRequest): TurnView {
  const messages = messagesOf(request.body);
  let lastUser = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]?.role === 'user') {
      lastUser = i;
      break;
    }
  }
  const after = messages.slice(lastUser + 1);
  return {
    request,
    group: groupIdOf(request.body),
    text: newestChatText(request.body),
    step: after.filter((m) => m.role === 'assistant').length,
    toolResults: after
      .filter((m) => m.role === 'tool')
      .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content))),
  };
}

export type TurnStep = (turn: TurnView) => ScriptedResponse | Promise<ScriptedResponse>;

/**
 * Answers the n-th model call of each turn with `steps[n]` (the last step repeats), e.g. a tool call
 * first and then words built from its result.
 */
export function turnResponder(...steps: TurnStep[]): Responder {
  if (steps.length === 0) throw new Error('turnResponder needs at least one step');
  return (request) => {
    const turn = turnOf(request);
    const step = steps[Math.min(turn.step, steps.length - 1)] as TurnStep;
    return step(turn);
  };
}

/**
 * An agent that writes `content` to `path` in its group folder and sends it with `send_message` (text and
 * attachment), then answers `<prefix>: <tool results>`.
 */
export function sendFileResponder(
  file: { path: string; content: string; text: string },
  prefix = 'sent',
): Responder {
  return turnResponder(
    () =>
      reply.toolCalls([
        { name: 'write_file', arguments: { path: file.path, content: file.content } },
        { name: 'send_message', arguments: { text: file.text, attachment: file.path } },
      ]),
    (turn) => reply.text(`${prefix}: ${turn.toolResults.join(' | ')}`),
  );
}

/** Dispatches on the group the request was made for; requests of other groups (or none) go to `other`. */
export function byGroup(routes: Record<string, Responder>, other?: Responder): Responder {
  return (request) => {
    const group = groupIdOf(request.body);
    const route = (group !== undefined ? routes[group] : undefined) ?? other;
    if (!route) throw new Error(`no scripted answer for group ${group ?? '(none)'}`);
    return route(request);
  };
}

/** A latch a responder can wait on, so a test decides when the provider answers. */
export interface Gate {
  readonly opened: Promise<void>;
  readonly isOpen: boolean;
  open(): void;
}

export function createGate(): Gate {
  let open: () => void = () => {};
  let isOpen = false;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return {
    opened,
    get isOpen() {
      return isOpen;
    },
    open() {
      isOpen = true;
      open();
    },
  };
}

/** Holds every request until `gate` opens, then answers with `responder`. */
export function heldBy(gate: Gate, responder: Responder): Responder {
  return async (request) => {
    await gate.opened;
    return responder(request);
  };
}
