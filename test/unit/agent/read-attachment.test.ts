import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { noCommands } from '../../../container-agent/src/executor/command-runner.ts';
import { documentTextParamsSchema } from '../../../container-agent/src/protocol.ts';
import { createReadAttachmentTool } from '../../../container-agent/src/tools/read-attachment.ts';
import { createWorkspace } from '../../../container-agent/src/workspace/confine.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();

describe('read_attachment tells the host the text it read', () => {
  it('reports the real path and the unfenced text, valid for the protocol, and returns it fenced', async () => {
    const root = fs.realpathSync(tempDir());
    fs.mkdirSync(path.join(root, 'media', '2026-01-01'), { recursive: true });
    const file = path.join(root, 'media', '2026-01-01', '9-lease.txt');
    fs.writeFileSync(file, 'Clause 7: the deposit is 1200 euros.');
    fs.writeFileSync(path.join(root, 'media', 'empty.txt'), '   ');
    const told: { method: string; params: unknown }[] = [];
    const tool = createReadAttachmentTool({
      workspace: createWorkspace({ root, cwd: root }),
      commands: noCommands('not needed for a text file'),
      env: {},
      host: { notify: (method, params) => void told.push({ method, params }) },
    });
    const out = await tool.run(
      { path: 'media/2026-01-01/9-lease.txt' },
      { signal: new AbortController().signal },
    );
    expect(out).toMatch(/^<<<DOCUMENT TEXT of .*9-lease\.txt/);
    expect(told).toEqual([
      { method: 'document.text', params: { path: file, text: 'Clause 7: the deposit is 1200 euros.' } },
    ]);
    expect(documentTextParamsSchema.safeParse(told[0]?.params).success).toBe(true);
    // Nothing to remember, nothing told.
    await tool.run({ path: 'media/empty.txt' }, { signal: new AbortController().signal });
    expect(told).toHaveLength(1);
  });
});
