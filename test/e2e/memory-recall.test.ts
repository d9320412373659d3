/**
 * Memory end to end: the owner dictates a note to the host, an agent in another group saves one with its
 * `remember` tool, and later runs in fresh containers recall them with `memory_search` through the host,
 * each hit with its author, a corrupted run's note fenced, and no group seeing another's memory.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { reply } from '../fakes/fake-provider.ts';
import { turnResponder } from '../fakes/e2e-responders.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { startE2eHost, type E2eHost } from './e2e-harness.ts';

/**
 * "@Andy note: <text>" makes the agent call `remember`; "@Andy recall: <words>" makes it search; anything
 * else is answered in words. The second step answers with the tool's result as it came back.
 */
const memoryAgent = turnResponder(
  (t) => {
    const body = t.text.replace(/^@Andy\s+/, '');
    if (body.startsWith('note: '))
      return reply.toolCalls([{ name: 'remember', arguments: { text: body.slice('note: '.length) } }]);
    if (body.startsWith('recall: '))
      return reply.toolCalls([
        { name: 'memory_search', arguments: { query: body.slice('recall: '.length) } },
      ]);
    return reply.text(`heard: ${t.text}`);
  },
  (t) => reply.text(`RESULT ${t.toolResults.join(' | ')}`),
);

await describeDocker('e2e: memory through real containers', () => {
  let h: E2eHost;

  beforeAll(async () => {
    h = await startE2eHost({ responder: memoryAgent });
    await h.addLocalGroups('fam');
  }, 180_000);
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  it("takes the owner's dictated note without a run, and a later run recalls it as the owner's words", async () => {
    const runsBefore = h.runs('main').length;
    const dictated = await h.send('main', 'remember that Sam is vegetarian and hates olives');
    expect(dictated.code).toBe(0);
    expect(dictated.stdout).toMatch(/^Remembered \(note \d+, memory\/[\w-]+\.md\)/);
    // A host command: no container, no run, nothing stored for an agent.
    expect(h.runs('main')).toHaveLength(runsBefore);
    const notes = fs.readdirSync(path.join(h.paths.groupsDir, 'main', 'memory'));
    expect(notes).toHaveLength(1);

    const recalled = await h.send('main', '@Andy recall: vegetarian');
    expect(recalled.code).toBe(0);
    expect(recalled.stdout).toContain('Sam is vegetarian and hates olives');
    expect(recalled.stdout).toContain('the owner');
    expect(recalled.stdout).not.toContain('UNTRUSTED');
  }, 120_000);

  it("recalls a note a group's own (corrupted) run saved, fenced as untrusted, and never another group's", async () => {
    const saved = await h.send('fam', '@Andy note: the gate code is 4711');
    expect(saved.code).toBe(0);
    expect(saved.stdout).toMatch(/^RESULT .*note:\d+/);

    const recalled = await h.send('fam', '@Andy recall: gate code');
    expect(recalled.stdout).toContain('the gate code is 4711');
    // A non-admin group's runs read strangers' words: what they wrote comes back fenced.
    expect(recalled.stdout).toMatch(/UNTRUSTED[\s\S]*the gate code is 4711/);

    // Each search finds the asking message itself (it is the group's history too), never the other group's.
    const elsewhere = await h.send('fam', '@Andy recall: vegetarian');
    expect(elsewhere.stdout).toMatch(/^RESULT \[message:\d+\]/);
    expect(elsewhere.stdout).not.toContain('Sam is vegetarian');
    const fromAdmin = await h.send('main', '@Andy recall: gate code');
    expect(fromAdmin.stdout).toMatch(/^RESULT \[message:\d+\]/);
    expect(fromAdmin.stdout).not.toContain('4711');
  }, 180_000);
});
