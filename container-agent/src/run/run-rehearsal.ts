/**
 * A run's start, rehearsed once with made-up input while the agent waits for run.start: a run.start's
 * params and answer, and a reply's, checked by the protocol's schemas, the turn rendered, the system prompt built, every
 * tool's JSON Schema derived (the admin's list and a member's: the run reuses them), and one LLM request
 * sent through the openai SDK and node's HTTP client to a server inside this process. The first run of
 * that code in a fresh process (compiling it, node loading its HTTP client and the parser of its answers)
 * cost more than everything else between run.start and the first LLM request; a pre-started container
 * pays it while it waits instead (DESIGN.md, "Containers").
 *
 * Nothing rehearsed leaves the process: no frame goes to the host (its client refuses every call), no
 * file is written, no command runs, and the request goes to a loopback server that answers it itself. The
 * rehearsal gives way to a real run: it stops between its steps once `superseded()` says run.start came.
 */
import { once } from 'node:events';
import { createServer } from 'node:net';
import type { CommandRunner } from '../executor/command-runner.ts';
import type { HostClient } from '../ipc/host-client.ts';
import type { ChatModel } from '../llm/chat-model.ts';
import type { BashClassifier } from '../bash-gate/fail-closed-classifier.ts';
import { agentMethods, hostMethods, type ChatMessage, type RunStartParams } from '../protocol.ts';
import { createAgentTools } from '../tools/agent-tools.ts';
import type { AgentTool } from '../tools/tool.ts';
import { createToolset } from '../tools/toolset.ts';
import type { ToolSpec } from '../llm/chat-model.ts';
import type { Workspace } from '../workspace/confine.ts';
import type { RunParams } from './run-preparation.ts';
import type { UserMessage } from '../history/conversation.ts';

export interface RehearsalDeps {
  workspace: Workspace;
  /** Renders the start messages as the run would. */
  render(params: RunParams, messages: readonly ChatMessage[]): UserMessage;
  systemPrompt(params: RunParams, workspace: Workspace): Promise<string>;
  /** The run's model client, for a base URL and key of the rehearsal's own. */
  createModel(baseURL: string, apiKey: string): ChatModel;
  /** True once run.start arrived: the rehearsal stops at its next step. */
  superseded(): boolean;
  /** The run's own (memoizedToolSpec), so that the JSON Schemas derived here are the run's. */
  toSpec?: (tool: AgentTool) => ToolSpec;
}

const REFUSED = 'the rehearsal of a run talks to no host';

/** A host client that refuses every call: a rehearsed tool must never reach the host. */
const refusingHost: HostClient = {
  request: () => Promise.reject(new Error(REFUSED)),
  notify: () => {
    throw new Error(REFUSED);
  },
};
const refusingCommands: CommandRunner = {
  run: () => Promise.reject(new Error(REFUSED)),
  separation: () => Promise.resolve(REFUSED),
};
const refusingClassifier: BashClassifier = {
  classify: () => ({ class: 'escalate', reason: REFUSED, network: false }),
};

/** What the loopback server answers: a chat completion with text only, as a provider would. */
const ANSWER = JSON.stringify({
  id: 'rehearsal',
  object: 'chat.completion',
  created: 0,
  model: 'rehearsal',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
});
const RESPONSE =
  'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n' +
  `content-length: ${Buffer.byteLength(ANSWER)}\r\n\r\n${ANSWER}`;

const MESSAGE: ChatMessage = {
  id: 1,
  sender: 'rehearsal',
  senderName: 'Rehearsal',
  text: 'Hello.',
  timestamp: new Date(0).toISOString(),
  fromAssistant: false,
};

const PARAMS: RunParams = {
  runId: 0,
  group: { id: 'rehearsal', name: 'Rehearsal', isAdmin: true, channel: 'local' },
  assistantName: 'Assistant',
  timezone: process.env.TZ || 'UTC',
  formatting: 'Plain text.',
  messages: [MESSAGE],
  limits: { maxToolSteps: 1, maxOutputTokens: 16, wallTimeMs: 60_000 },
};

/**
 * A run.start as the host sends it, with every optional part, for the protocol's schemas: zod works out
 * most of what a schema needs (its shape, its checks) at its first parse, which would otherwise be the
 * run's. Never sent, never handled.
 */
const FRAME: RunStartParams = {
  ...PARAMS,
  runId: 1,
  persona: 'Rehearsal.',
  model: 'rehearsal',
  gatewayKey: 'rehearsal',
  messages: [MESSAGE, { ...MESSAGE, id: 2, image: { path: 'media/rehearsal.jpg', mime: 'image/jpeg' } }],
  serviceTools: [{ service: 'rehearsal', tool: 'rehearse', description: 'Rehearsal.', inputSchema: {} }],
  commandSetup: { env: { CARAPACE_REHEARSAL: '1' }, gitConfig: [{ key: 'user.name', value: 'Rehearsal' }] },
  drafts: true,
};

/** A run's reply as the agent sends it, for the protocol's schemas as FRAME is. */
const REPLY = { text: 'Rehearsal.', final: true } as const;

/** Rehearses a run's start once; resolves when done or given way to a real run. Never rejects. */
export async function rehearseRunStart(deps: RehearsalDeps): Promise<'done' | 'superseded' | string> {
  try {
    if (deps.superseded()) return 'superseded';
    const frame = agentMethods['run.start'];
    if (!frame.params.safeParse(FRAME).success || !frame.result.safeParse({ accepted: true }).success)
      return 'the made-up run.start does not fit the protocol';
    // The reply's frame and its answer too: the agent checks both on the way to the group's reply.
    const reply = hostMethods['message.send'];
    if (!reply.params.safeParse(REPLY).success || !reply.result.safeParse({ queued: true }).success)
      return 'the made-up reply does not fit the protocol';
    const turn = deps.render(PARAMS, PARAMS.messages);
    const systemPrompt = await deps.systemPrompt(PARAMS, deps.workspace);
    if (deps.superseded()) return 'superseded';
    const toolList = (isAdmin: boolean) =>
      createToolset(
        createAgentTools({
          workspace: deps.workspace,
          host: refusingHost,
          classifier: refusingClassifier,
          isAdmin,
          commandEnv: {},
          commands: refusingCommands,
          bashCheckTimeoutMs: 1000,
          ripgrep: () => Promise.resolve(null),
        }),
        deps.toSpec ? { toSpec: deps.toSpec } : {},
      );
    toolList(false);
    const tools = toolList(true);
    if (deps.superseded()) return 'superseded';
    await answeredOnLoopback(async (baseURL) => {
      const model = deps.createModel(baseURL, 'rehearsal');
      await model.complete({
        model: 'rehearsal',
        messages: [{ role: 'system', content: systemPrompt }, turn],
        tools: tools.specs,
        toolChoice: 'auto',
        maxOutputTokens: 16,
        signal: AbortSignal.timeout(10_000),
      });
    });
    return 'done';
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** Runs `use` against a server on 127.0.0.1 that answers each request with a canned completion. */
async function answeredOnLoopback(use: (baseURL: string) => Promise<void>): Promise<void> {
  const server = createServer((socket) => {
    let head = '';
    socket.setEncoding('latin1');
    socket.on('error', () => undefined);
    socket.on('data', (chunk: string) => {
      head += chunk;
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) return;
      const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head.slice(0, end))?.[1] ?? 0);
      // The whole body read first: answering earlier would cut the client off mid-request.
      if (Buffer.byteLength(head.slice(end + 4), 'latin1') < length) return;
      socket.end(RESPONSE);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('the loopback server has no port');
    await use(`http://127.0.0.1:${address.port}/v1`);
  } finally {
    server.close();
  }
}
