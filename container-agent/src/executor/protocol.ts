/**
 * The lines the agent and the command executor exchange over their pipes (DESIGN.md, "Bash gate"). The
 * executor runs as the commands' uid, so the agent reads what it says as it reads a command's output:
 * untrusted, bounded, parsed. zod's functional API: the executor loads it at every container start.
 */
import * as z from 'zod/mini';

/** A reply holds two captured streams of at most this much each, JSON-escaped (up to 6 bytes a byte). */
export const MAX_CAPTURE_BYTES = 256 * 1024;
export const MAX_EXECUTOR_LINE_BYTES = 2 * 6 * MAX_CAPTURE_BYTES + 64 * 1024;

const id = z.number().check(z.int(), z.nonnegative());
const uid = z.number().check(z.int(), z.positive());

export const executorRequestSchema = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('run'),
    id,
    command: z.string().check(z.minLength(1), z.maxLength(100_000)),
    cwd: z.string().check(z.minLength(1), z.maxLength(4096)),
    env: z.record(z.string().check(z.maxLength(256)), z.string().check(z.maxLength(16_384))),
    timeoutMs: z.number().check(z.int(), z.positive()),
    maxOutputBytes: z.number().check(z.int(), z.positive(), z.maximum(MAX_CAPTURE_BYTES)),
  }),
  z.strictObject({ type: z.literal('abort'), id }),
]);
export type ExecutorRequest = z.infer<typeof executorRequestSchema>;

const capture = z.string().check(z.maxLength(6 * MAX_CAPTURE_BYTES));

export const executorReplySchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('hello'), uid, gid: uid }),
  z.strictObject({
    type: z.literal('result'),
    id,
    exitCode: z.nullable(z.number().check(z.int())),
    signal: z.nullable(z.string().check(z.maxLength(32))),
    stdout: capture,
    stderr: capture,
    timedOut: z.boolean(),
    aborted: z.boolean(),
    omittedBytes: z.number().check(z.int(), z.nonnegative()),
  }),
  z.strictObject({ type: z.literal('error'), id, message: z.string().check(z.maxLength(2000)) }),
]);
export type ExecutorReply = z.infer<typeof executorReplySchema>;
