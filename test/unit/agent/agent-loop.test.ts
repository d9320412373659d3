import { describe, expect, it } from 'vitest';
import { scriptedChatModel, type ScriptStep } from '../../fakes/scripted-chat-model.ts';
import { z } from 'zod';
import {
  sanitizeConversation,
  type ConversationMessage,
} from '../../../container-agent/src/history/conversation.ts';
import type { ChatModel } from '../../../container-agent/src/llm/chat-model.ts';
import type { ChatMessage } from '../../../container-agent/src/protocol.ts';
import {
  RunAbortedError,
  STEP_LIMIT_NOTE,
  runAgentLoop,
  type AgentLoopOptions,
} from '../../../container-agent/src/run/agent-loop.ts';
import { createInbox } from '../../../container-agent/src/run/inbox.ts';
import { defineTool } from '../../../container-agent/src/tools/tool.ts';
import { createToolset } from '../../../container-agent/src/tools/toolset.ts';

const scriptedModel = (steps: ScriptStep[]) => scriptedChatModel(steps);

const echoTool = defineTool({
  name: 'echo',
  description: 'Echo the text back.',
  schema: z.object({ text: z.string() }).strict(),
  run: async ({ text }) => `echo: ${text}`,
});

const chat = (id: number, text: string): ChatMessage => ({
  id,
  sender: 'u1',
  senderName: 'Ann',
  text,
  timestamp: '2025-01-01T10:00:00Z',
  fromAssistant: false,
});

function loopOptions(model: ChatModel, overrides: Partial<AgentLoopOptions> = {}) {
  const recorded: ConversationMessage[] = [];
  const replies: string[] = [];
  const options: AgentLoopOptions = {
    model,
    modelName: 'test-model',
    tools: createToolset([echoTool]),
    systemPrompt: 'SYSTEM',
    conversation: [{ role: 'user', content: 'hello', chatIds: [1] }],
    limits: { maxToolSteps: 5, maxOutputTokens: 256 },
    inbox: createInbox(),
    renderInput: (messages) => ({
      role: 'user',
      content: messages.map((m) => m.text).join('\n'),
      chatIds: messages.map((m) => m.id),
    }),
    record: async (m) => void recorded.push(m),
    sendReply: async (text) => void replies.push(text),
    signal: new AbortController().signal,
    ...overrides,
  };
  return { options, recorded, replies };
}

describe('runAgentLoop', () => {
  it('runs the requested tools, feeds results back and posts the final answer', async () => {
    const { model, requests } = scriptedModel([
      {
        toolCalls: [
          { id: 'c1', name: 'echo', arguments: '{"text":"a"}' },
          { id: 'c2', name: 'echo', arguments: '{"text":1}' },
        ],
      },
      { content: '  All done.  ' },
    ]);
    const { options, recorded, replies } = loopOptions(model);
    const result = await runAgentLoop(options);
    expect(result).toEqual({
      finalText: 'All done.',
      usage: { promptTokens: 20, completionTokens: 10, toolSteps: 1 },
    });
    expect(replies).toEqual(['All done.']);
    expect(recorded).toEqual([
      {
        role: 'assistant',
        content: null,
        toolCalls: [
          { id: 'c1', name: 'echo', arguments: '{"text":"a"}' },
          { id: 'c2', name: 'echo', arguments: '{"text":1}' },
        ],
      },
      { role: 'tool', toolCallId: 'c1', content: 'echo: a' },
      {
        role: 'tool',
        toolCallId: 'c2',
        content: expect.stringMatching(/^Error: invalid arguments for echo: text/),
      },
      { role: 'assistant', content: 'All done.' },
    ]);
    expect(requests[0]?.messages[0]).toEqual({ role: 'system', content: 'SYSTEM' });
    expect(requests[1]?.messages.slice(-2).map((m) => m.role)).toEqual(['tool', 'tool']);
    expect(
      requests.every((r) => r.toolChoice === 'auto' && r.maxOutputTokens === 256 && r.model === 'test-model'),
    ).toBe(true);
  });

  it('asks for a final answer without tools once the step limit is used up, and drops late tool calls', async () => {
    const wantsTools = { toolCalls: [{ id: 'x', name: 'echo', arguments: '{"text":"again"}' }] };
    const { model, requests } = scriptedModel([
      wantsTools,
      { toolCalls: [{ id: 'y', name: 'echo', arguments: '{"text":"again"}' }] },
      { content: 'partial answer', toolCalls: [{ id: 'z', name: 'echo', arguments: '{}' }] },
    ]);
    const { options, recorded, replies } = loopOptions(model, {
      limits: { maxToolSteps: 2, maxOutputTokens: 100 },
    });
    const result = await runAgentLoop(options);
    expect(result.usage.toolSteps).toBe(2);
    expect(requests[2]?.toolChoice).toBe('none');
    expect(requests[2]?.messages.at(-1)).toEqual({ role: 'user', note: true, content: STEP_LIMIT_NOTE });
    expect(replies).toEqual(['partial answer']);
    const conversation = [...options.conversation, ...recorded];
    expect(sanitizeConversation(conversation)).toEqual(conversation);
    expect(recorded.at(-1)).toEqual({ role: 'assistant', content: 'partial answer' });
  });

  it('answers messages that arrive during the run, then closes the inbox', async () => {
    const inbox = createInbox();
    const { model, requests } = scriptedModel([
      () => {
        // A follow-up arrives while the model is writing its answer.
        expect(inbox.offer([chat(2, 'and also this')])).toBe(true);
        return { content: 'first answer' };
      },
      { content: 'second answer' },
    ]);
    const { options, recorded, replies } = loopOptions(model, { inbox });
    await runAgentLoop(options);
    expect(replies).toEqual(['first answer', 'second answer']);
    expect(recorded.map((m) => m.role)).toEqual(['assistant', 'user', 'assistant']);
    expect(recorded[1]).toEqual({ role: 'user', content: 'and also this', chatIds: [2] });
    expect(requests[1]?.messages.at(-1)).toEqual({ role: 'user', content: 'and also this', chatIds: [2] });
    expect(inbox.closed).toBe(true);
    expect(inbox.offer([chat(3, 'too late')])).toBe(false);
  });

  it('posts nothing for an empty final answer', async () => {
    const { model } = scriptedModel([{ content: '   ' }]);
    const { options, replies } = loopOptions(model);
    expect((await runAgentLoop(options)).finalText).toBe('');
    expect(replies).toEqual([]);
  });

  it('stops with the abort reason when the run is aborted', async () => {
    const controller = new AbortController();
    const { model } = scriptedModel([
      (request) =>
        new Promise((_, reject) => {
          request.signal.addEventListener('abort', () => reject(new Error('fetch aborted')));
          controller.abort(new RunAbortedError('the wall time ran out'));
        }),
    ]);
    const { options, replies } = loopOptions(model, { signal: controller.signal });
    await expect(runAgentLoop(options)).rejects.toThrow(new RunAbortedError('the wall time ran out'));
    expect(replies).toEqual([]);
  });
});

describe('a final answer that cannot be sent', () => {
  it('is not remembered as given, so a retried run answers again', async () => {
    const { model } = scriptedModel([{ content: 'the answer' }]);
    const { options, recorded } = loopOptions(model, {
      sendReply: async () => {
        throw new Error('the host is gone');
      },
    });
    await expect(runAgentLoop(options)).rejects.toThrow(/the host is gone/);
    expect(recorded.some((m) => m.role === 'assistant')).toBe(false);
  });
});
