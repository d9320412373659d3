import readline from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { newClientMessageId, type ConsoleEvent } from '../channels/local/local-api.ts';
import type { LocalClient } from '../channels/local/local-client.ts';
import { errorMessage } from '../errors/error-message.ts';

type CapRefusal = NonNullable<Extract<ConsoleEvent, { type: 'state' }>['capRefusal']>;

export interface ChatOptions {
  client: LocalClient;
  group: string;
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
  assistantName: string;
  /** What /quit does here, said in the greeting: leaving a chat, or stopping the host of `start`. */
  quitEffect?: string;
}

/**
 * What a line that is one `/word` means to the console itself: `/help` lists what the console understands;
 * any other word is not sent to the assistant by mistake. Undefined: the line is a message (admin commands
 * such as `/approve <id>` have an argument and go to the host, which knows them).
 */
export function consoleHelp(text: string, quitEffect: string): string | undefined {
  const word = text.toLowerCase();
  if (word === '/pending') return undefined;
  if (word === '/help')
    return (
      'Type a message and press Enter to send it. The console understands:\n' +
      `  /help          this list\n  /quit, /exit    ${quitEffect} (Ctrl+D too)\n` +
      'In the admin group, also: pending, approve <id>, deny <id> (the owner decides waiting requests).\n'
    );
  return `(${text} is not a console command and was not sent; /help lists them)\n`;
}

/**
 * An interactive console on one group: every line is sent as a message, and replies are printed as they
 * are delivered by an event stream that runs alongside, so typing never waits for an answer.
 */
export async function runChat({
  client,
  group,
  input,
  output,
  assistantName,
  quitEffect = 'leaves (the host keeps running)',
}: ChatOptions): Promise<void> {
  const rl = readline.createInterface({
    input,
    output,
    terminal: (input as { isTTY?: boolean }).isTTY === true,
  });
  const controller = new AbortController();
  const seen = new Set<string>();
  let after: number | 'latest' = 'latest';
  // The group's line at the cap comes once a day; a refusal of what was typed here is told every time. The
  // host may refuse a message before its POST returns: both the state and the POST's answer check.
  const waiting = new Set<number>();
  let lastRefusal: CapRefusal | undefined;
  let cursor = 0;
  const tellRefused = () => {
    const refusal = lastRefusal;
    const refused = [...waiting].filter((id) => refusal && refusal.after < id && id <= refusal.through);
    for (const id of waiting) if (id <= cursor) waiting.delete(id);
    if (refusal && refused.length > 0) show(`(not answered: ${refusal.reason})`);
  };
  const show = (line: string) => {
    readline.clearLine(output, 0);
    readline.cursorTo(output, 0);
    output.write(`${line}\n`);
    rl.prompt(true);
  };
  const print = (text: string) => show(`${assistantName}: ${text}`);

  const stream = (async () => {
    while (!controller.signal.aborted) {
      try {
        await client.events(
          group,
          after,
          (e) => {
            if (e.type === 'state') {
              if (after === 'latest') after = e.lastOutboxId;
              lastRefusal = e.capRefusal;
              cursor = e.cursor;
              tellRefused();
              return;
            }
            after = Math.max(after === 'latest' ? 0 : after, e.outboxId);
            if (seen.has(e.key)) return;
            seen.add(e.key);
            print(e.text);
          },
          controller.signal,
        );
      } catch (err) {
        output.write(`(${errorMessage(err)})\n`);
      }
      await sleep(500, undefined, { signal: controller.signal }).catch(() => undefined);
    }
  })();

  // Ctrl+C leaves like /quit, so the host behind an interactive `start` shuts down cleanly.
  rl.on('SIGINT', () => rl.close());
  output.write(`Talking to group "${group}". Type a message; /quit or Ctrl+D ${quitEffect}.\n`);
  rl.setPrompt(`${group}> `);
  rl.prompt();
  for await (const line of rl) {
    const text = line.trim();
    if (text === '/quit' || text === '/exit') break;
    const consoleCommand = /^\/[a-z]+$/i.test(text) ? consoleHelp(text, quitEffect) : undefined;
    if (consoleCommand !== undefined) {
      output.write(consoleCommand);
    } else if (text) {
      try {
        const res = await client.postMessage({ group, text, clientMessageId: newClientMessageId() });
        if (res.triggered && res.messageId !== null) {
          waiting.add(res.messageId);
          tellRefused();
        }
        if (!res.triggered && !res.duplicate && res.commandReplyKey === null)
          output.write(`(stored as context; mention @${assistantName} for a reply)\n`);
      } catch (err) {
        output.write(`(not sent: ${errorMessage(err)})\n`);
      }
    }
    rl.prompt();
  }
  controller.abort();
  rl.close();
  await stream;
}
