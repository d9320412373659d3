/**
 * The rehearsal of a run's start (run-rehearsal.ts): the real renderer, prompt, tools and openai client,
 * one real HTTP request to its own loopback server. It must leave nothing behind (no file written in the
 * workspace, no request to the real gateway) and give way to a run that has started.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createOpenAiChatModel } from '../../../container-agent/src/llm/openai-chat-model.ts';
import type { ChatModel } from '../../../container-agent/src/llm/chat-model.ts';
import { rehearseRunStart } from '../../../container-agent/src/run/run-rehearsal.ts';
import { renderTurn, systemPromptFor } from '../../../container-agent/src/run/run-preparation.ts';
import { createWorkspace } from '../../../container-agent/src/workspace/confine.ts';
import { createAgentTools } from '../../../container-agent/src/tools/agent-tools.ts';
import { memoizedToolSpec, type AgentTool } from '../../../container-agent/src/tools/tool.ts';
import { noCommands } from '../../../container-agent/src/executor/command-runner.ts';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-'));
  fs.mkdirSync(path.join(root, 'group'));
  fs.writeFileSync(path.join(root, 'group', 'AGENT.md'), '# Memory\nThe owner likes tea.\n');
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

/** Lists every file under `dir` with its content, to show nothing changed. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const file = path.join(entry.parentPath, entry.name);
    out[path.relative(dir, file)] = entry.isFile() ? fs.readFileSync(file, 'utf8') : '<dir>';
  }
  return out;
}

function rehearsalDeps(superseded: () => boolean, requests: { baseURL: string; body: unknown }[]) {
  const workspace = createWorkspace({ root, cwd: path.join(root, 'group') });
  return {
    workspace,
    render: (params: Parameters<typeof renderTurn>[0], messages: Parameters<typeof renderTurn>[1]) =>
      renderTurn(params, messages, 'nonce'),
    systemPrompt: (params: Parameters<typeof renderTurn>[0], w: typeof workspace) =>
      systemPromptFor(params, w, { workspaceRoot: root, historyTokens: 40_000 }, new Date()),
    createModel: (baseURL: string, apiKey: string): ChatModel => {
      const model = createOpenAiChatModel({ baseURL, apiKey, maxRetries: 0 });
      return {
        async complete(request) {
          const answer = await model.complete(request);
          requests.push({ baseURL, body: request });
          return answer;
        },
      };
    },
    superseded,
  };
}

describe('rehearsing a run start', () => {
  it('sends one request with every tool to a loopback server of its own and writes nothing', async () => {
    const before = snapshot(root);
    const requests: { baseURL: string; body: unknown }[] = [];
    expect(await rehearseRunStart(rehearsalDeps(() => false, requests))).toBe('done');
    expect(requests).toHaveLength(1);
    expect(requests[0]?.baseURL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const body = requests[0]?.body as { tools: { name: string }[]; messages: { content: string }[] };
    // The admin list is the longest: every tool's schema is derived once.
    expect(body.tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['bash', 'read_file', 'propose_config']),
    );
    expect(body.messages[0]?.content).toContain('The owner likes tea.');
    expect(snapshot(root)).toEqual(before);
  });

  it("derives every JSON Schema of the admin's and a member's tool list, for the run to reuse", async () => {
    const memo = memoizedToolSpec();
    const rehearsed = new Set<unknown>();
    const toSpec = (tool: AgentTool) => {
      const spec = memo(tool);
      rehearsed.add(spec.parameters);
      return spec;
    };
    const requests: { baseURL: string; body: unknown }[] = [];
    expect(await rehearseRunStart({ ...rehearsalDeps(() => false, requests), toSpec })).toBe('done');
    const workspace = createWorkspace({ root, cwd: path.join(root, 'group') });
    for (const isAdmin of [true, false]) {
      const run = createAgentTools({
        workspace,
        host: { request: () => Promise.reject(new Error('unused')), notify: () => undefined },
        classifier: { classify: () => ({ class: 'escalate', reason: 'unused', network: false }) },
        isAdmin,
        commandEnv: {},
        commands: noCommands('unused'),
        bashCheckTimeoutMs: 1000,
        ripgrep: () => Promise.resolve(null),
      });
      for (const tool of run) expect(rehearsed.has(memo(tool).parameters), tool.name).toBe(true);
    }
  });

  it('gives way to a run that started before it or while it runs', async () => {
    const requests: { baseURL: string; body: unknown }[] = [];
    expect(await rehearseRunStart(rehearsalDeps(() => true, requests))).toBe('superseded');
    let checks = 0;
    // run.start comes after its first step.
    expect(await rehearseRunStart(rehearsalDeps(() => ++checks > 1, requests))).toBe('superseded');
    expect(requests).toEqual([]);
  });
});
