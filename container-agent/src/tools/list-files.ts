import fs from 'node:fs/promises';
import path from 'node:path';
import * as z from 'zod';
import type { Workspace } from '../workspace/confine.ts';
import { ToolError, defineTool, type AgentTool } from './tool.ts';

const MAX_ENTRIES = 1000;
/** Folders whose contents a recursive listing does not enter. */
export const SKIPPED_DIRS = new Set(['.git', 'node_modules']);

const listArgs = z
  .object({
    path: z.string().min(1).max(4096).optional().describe('Folder to list (default: the group folder).'),
    recursive: z.boolean().optional().describe('List subfolders too (skips .git and node_modules).'),
  })
  .strict();

export function createListFilesTool(workspace: Workspace): AgentTool {
  return defineTool({
    name: 'list_files',
    description: 'List a workspace folder. Folders end with "/", symlinks with "@".',
    schema: listArgs,
    async run(args) {
      const dir = await workspace.resolve(args.path ?? '.');
      const stat = await fs.stat(dir);
      if (!stat.isDirectory()) throw new ToolError(`${args.path} is not a folder`);
      const entries: string[] = [];
      let truncated = false;
      const queue: string[] = [''];
      while (queue.length > 0 && !truncated) {
        const relative = queue.shift() as string;
        const children = await fs.readdir(path.join(dir, relative), { withFileTypes: true });
        children.sort((a, b) => a.name.localeCompare(b.name));
        for (const child of children) {
          if (entries.length >= MAX_ENTRIES) {
            truncated = true;
            break;
          }
          const name = path.join(relative, child.name);
          const suffix = child.isDirectory() ? '/' : child.isSymbolicLink() ? '@' : '';
          entries.push(name + suffix);
          if (args.recursive && child.isDirectory() && !SKIPPED_DIRS.has(child.name)) queue.push(name);
        }
      }
      if (entries.length === 0) return `${workspace.display(dir)} is empty.`;
      if (truncated) entries.push(`[stopped after ${MAX_ENTRIES} entries]`);
      return entries.join('\n');
    },
  });
}
