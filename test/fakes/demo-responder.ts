import { reply, type Responder } from './fake-provider-script.ts';

/** The newest chat message text the agent showed the model (its messages are JSON lines in a fence). */
export function newestChatText(body: unknown): string {
  const messages = (body as { messages?: { role: string; content?: unknown }[] }).messages ?? [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m?.role !== 'user' || typeof m.content !== 'string') continue;
    const texts = [...m.content.matchAll(/^\{.*"text":(".*?(?<!\\)")\}$/gm)].map(
      (x) => JSON.parse(x[1] as string) as string,
    );
    if (texts.length) return texts[texts.length - 1] as string;
  }
  return '';
}

const hasToolResult = (body: unknown) =>
  ((body as { messages?: { role: string }[] }).messages ?? []).some((m) => m.role === 'tool');

/**
 * A model stand-in for the demo and end-to-end tests: first it calls write_file to keep a note of the
 * message, then, seeing the tool result, it answers in words.
 */
export const demoResponder: Responder = (request) => {
  const text = newestChatText(request.body);
  if (!hasToolResult(request.body)) {
    return reply.toolCalls([
      { name: 'write_file', arguments: { path: 'notes/last-message.txt', content: `${text}\n` } },
    ]);
  }
  return reply.text(`I saved your message in notes/last-message.txt. You said: "${text}"`);
};
