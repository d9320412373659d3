/**
 * What a run reads before its loop: the group's stored conversation (loaded, compacted), the start
 * messages it has not yet taken in, and the system prompt with the group's memory. The stored
 * conversation loads while the container waits for run.start (a pre-started one waits for seconds or
 * minutes); run.start then only checks that the file is still the one loaded, and loads it again if not.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { compactConversation } from '../history/compaction.ts';
import { maxChatId, type ConversationMessage, type UserMessage } from '../history/conversation.ts';
import { createHistoryStore, type HistoryStore } from '../history/history-store.ts';
import type { AgentLogger } from '../logging/stderr-logger.ts';
import { renderChatMessages } from '../prompt/chat-messages.ts';
import { MAX_MEMORY_CHARS, buildSystemPrompt } from '../prompt/system-prompt.ts';
import type { ChatMessage, RunStartParams } from '../protocol.ts';
import { createWorkspace, type Workspace } from '../workspace/confine.ts';

const PRIVATE_FOLDER = 0o700;

/** run.start without its gateway key: the key lives only inside the run's model client. */
export type RunParams = Omit<RunStartParams, 'gatewayKey'>;

export interface PreparationSettings {
  workspaceRoot: string;
  historyTokens: number;
}

export interface StoredConversation {
  workspace: Workspace;
  history: HistoryStore;
  conversation: ConversationMessage[];
  /** The history file as it was when loaded (inode, size, mtime); undefined when there was none. */
  stamp: string | undefined;
}

/** The folders a run needs, and the conversation stored so far (compacted to the history budget). */
export async function loadStoredConversation(
  settings: PreparationSettings,
  now: () => Date,
  logger: AgentLogger,
): Promise<StoredConversation> {
  const root = settings.workspaceRoot;
  const groupDir = path.join(root, 'group');
  const sessionDir = path.join(root, 'session');
  await fs.mkdir(groupDir, { recursive: true });
  // The session folder is the agent's alone (commands share its gid): nothing a command writes is ever
  // loaded as the agent's own. The separation check refuses commands until this holds.
  await fs.mkdir(sessionDir, { recursive: true, mode: PRIVATE_FOLDER });
  await fs.chmod(sessionDir, PRIVATE_FOLDER);
  const workspace = createWorkspace({ root, cwd: groupDir });
  const history = createHistoryStore({ sessionDir, now });
  return { workspace, history, ...(await loadHistory(history, settings.historyTokens, logger)) };
}

/** The stored conversation again if its file changed since it was loaded (another run wrote it). */
export async function refreshStoredConversation(
  stored: StoredConversation,
  settings: PreparationSettings,
  logger: AgentLogger,
): Promise<StoredConversation> {
  if ((await stampOf(stored.history.file)) === stored.stamp) return stored;
  logger.info({}, 'history changed while waiting; loading it again');
  return { ...stored, ...(await loadHistory(stored.history, settings.historyTokens, logger)) };
}

async function loadHistory(
  history: HistoryStore,
  historyTokens: number,
  logger: AgentLogger,
): Promise<Pick<StoredConversation, 'conversation' | 'stamp'>> {
  const loaded = await history.load();
  if (loaded.skippedLines > 0)
    logger.warn({ skippedLines: loaded.skippedLines }, 'history: unreadable lines skipped');
  if (loaded.setAside) logger.warn({ reason: loaded.setAside }, "history: a file not the agent's set aside");
  const compacted = compactConversation(loaded.messages, historyTokens);
  if (compacted.dropped > 0 || compacted.shortened > 0 || loaded.skippedLines > 0) {
    await history.replace(compacted.messages);
    logger.info({ dropped: compacted.dropped, shortened: compacted.shortened }, 'history compacted');
  }
  return { conversation: compacted.messages, stamp: await stampOf(history.file) };
}

async function stampOf(file: string): Promise<string | undefined> {
  try {
    const stat = await fs.lstat(file, { bigint: true });
    return `${stat.ino}:${stat.size}:${stat.mtimeNs}`;
  } catch {
    return undefined;
  }
}

/** The start messages not yet in the conversation: a retried run gets messages it already took in. */
export function freshMessages(
  conversation: readonly ConversationMessage[],
  messages: readonly ChatMessage[],
): ChatMessage[] {
  const seen = maxChatId(conversation);
  return messages.filter((m) => m.id > seen);
}

/** The photos among `messages` the host offered as images (at most 16 per turn). */
function withImages(messages: readonly ChatMessage[]): { images?: { path: string; mime: string }[] } {
  const images = messages.flatMap((m) => (m.image ? [m.image] : [])).slice(-16);
  return images.length > 0 ? { images } : {};
}

/** Chat messages as one user turn, fenced with a fresh nonce. */
export function renderTurn(params: RunParams, messages: readonly ChatMessage[], nonce: string): UserMessage {
  const content = renderChatMessages(messages, {
    assistantName: params.assistantName,
    timezone: params.timezone,
    nonce,
    trusted: params.group.isAdmin,
  });
  return { role: 'user', content, chatIds: messages.map((m) => m.id), ...withImages(messages) };
}

export async function systemPromptFor(
  params: RunParams,
  workspace: Workspace,
  settings: PreparationSettings,
  now: Date,
): Promise<string> {
  return buildSystemPrompt({
    assistantName: params.assistantName,
    group: params.group,
    timezone: params.timezone,
    formatting: params.formatting,
    persona: params.persona,
    now,
    workspaceRoot: settings.workspaceRoot,
    memory: await readMemory(workspace),
    credentials: params.commandSetup?.env.CARAPACE_CREDENTIALS,
  });
}

async function readMemory(workspace: Workspace): Promise<string | null> {
  let file: string;
  try {
    file = await workspace.resolve('AGENT.md');
  } catch {
    return null;
  }
  try {
    const handle = await fs.open(file, 'r');
    try {
      const buffer = Buffer.alloc(MAX_MEMORY_CHARS * 4 + 4);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      return buffer.subarray(0, bytesRead).toString('utf8');
    } finally {
      await handle.close();
    }
  } catch {
    return null;
  }
}
