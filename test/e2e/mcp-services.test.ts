/**
 * An MCP server as a group's tool, through real containers: the memory server from npm as the family
 * group's notebook (a stdio server on the host, so the Cop reviews every call). One run remembers, a later
 * run recalls; a group the service is not given is not offered its tools, and a call after the owner
 * took the service away is refused as forbidden and audited.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeDocker } from '../helpers/docker-available.ts';
import {
  auditMark,
  auditSince,
  unaskedSend,
  copReviews,
  resultsOf,
  runTools,
  securityResponder,
} from '../fakes/security-responders.ts';
import { reply, type Responder } from '../fakes/fake-provider-script.ts';
import { memoryNotebook } from '../helpers/mcp-servers.ts';
import { startE2eHost, type E2eHost, type E2eHostOptions } from './e2e-harness.ts';

const withGroups = (config: Record<string, unknown>) => config as unknown as E2eHostOptions['config'];
const offeredTools = (body: unknown): string[] =>
  ((body as { tools?: { function?: { name?: string } }[] }).tools ?? []).map((t) => t.function?.name ?? '');

await describeDocker('e2e: an MCP server as a group’s notebook', () => {
  let h: E2eHost;
  let folder: string;

  beforeAll(async () => {
    folder = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-e2e-memory-'));
    h = await startE2eHost({
      secrets: { MEMORY_FILE_PATH: path.join(folder, 'family.jsonl') },
      config: withGroups({
        runs: { max_attempts: 1 },
        services: {
          notebook: memoryNotebook(),
        },
        groups: { family: { services: ['notebook'] }, work: { services: [] } },
      }),
    });
    await h.addLocalGroups('family', 'work');
  }, 180_000);
  afterAll(async () => {
    await h?.stop();
    fs.rmSync(folder, { recursive: true, force: true });
  }, 60_000);

  it('a run remembers through the memory server and a later run recalls it', async () => {
    const fact = `dentist on Tuesday at 10:${crypto.randomInt(10, 59)}`;
    const mark = auditMark(h);
    h.fake.setResponder(
      securityResponder({
        family: runTools([
          {
            name: 'notebook__create_entities',
            arguments: { entities: [{ name: 'Dentist', entityType: 'appointment', observations: [fact] }] },
          },
        ]),
      }),
    );
    const remembered = await h.send('family', '@Andy remember the dentist appointment');
    expect(remembered.code).toBe(0);
    expect(resultsOf(remembered.stdout)[0]).toContain(fact);
    expect(fs.readFileSync(path.join(folder, 'family.jsonl'), 'utf8')).toContain(fact);

    h.fake.setResponder(
      securityResponder({
        family: runTools([{ name: 'notebook__search_nodes', arguments: { query: 'Dentist' } }]),
      }),
    );
    const recalled = await h.send('family', '@Andy when is the dentist?');
    const [result] = resultsOf(recalled.stdout);
    expect(result).toMatch(/^<<<UNTRUSTED TEXT from notebook\.search_nodes/);
    expect(result).toContain(fact);

    const rows = auditSince(h, mark)
      .filter((r) => !unaskedSend(r))
      .map((r) => [r.operation, r.decision]);
    expect(rows).toEqual([
      ['service.notebook.create_entities.cop', 'passed'],
      ['service.notebook.create_entities', 'allowed'],
      ['service.notebook.search_nodes.cop', 'passed'],
      ['service.notebook.search_nodes', 'allowed'],
    ]);
    const status = await h.cli(['status']);
    expect(status.stdout).toContain('service notebook (stdio): ready, 9 tools');
    expect(copReviews(h.fake.requests).map((r) => r.operation)).toEqual(
      expect.arrayContaining(['service.notebook.create_entities', 'service.notebook.search_nodes']),
    );
  }, 120_000);

  it('a group not given the service is not offered it; a call after the owner took it away is forbidden and audited', async () => {
    h.fake.setResponder(securityResponder({ work: () => reply.text('nothing to do') }));
    const from = h.fake.requests.length;
    await h.send('work', '@Andy hello');
    const workRequest = h.fake.requests.slice(from).find((r) => offeredTools(r.body).includes('bash'));
    expect(workRequest).toBeDefined();
    expect(offeredTools(workRequest?.body).filter((n) => n.startsWith('notebook__'))).toEqual([]);

    // The family's run is offered the notebook; before its model answers, the owner takes it away.
    let first = true;
    const takenAway: Responder = async (request) => {
      if (!first) return runTools([])(request);
      first = false;
      expect(offeredTools(request.body)).toContain('notebook__read_graph');
      const set = await h.cli(['config', 'set', 'groups.family.services', '[]']);
      expect(set.code).toBe(0);
      return reply.toolCalls([{ name: 'notebook__read_graph', arguments: {} }]);
    };
    h.fake.setResponder(securityResponder({ family: takenAway }));
    const mark = auditMark(h);
    const res = await h.send('family', '@Andy what do you remember?');
    expect(resultsOf(res.stdout)).toEqual(['Not allowed for this chat: this group may not use notebook']);
    expect(auditSince(h, mark).map((r) => [r.operation, r.decision])).toContainEqual([
      'service.notebook.read_graph',
      'denied',
    ]);
  }, 120_000);
});
