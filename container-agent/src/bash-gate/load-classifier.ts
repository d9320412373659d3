/**
 * Builds the bash classifier for the bash tool. If the parser cannot be loaded the agent still works,
 * but every command goes to the host for a decision (fail closed), and the log says why.
 */
import type { AgentLogger } from '../logging/stderr-logger.ts';
import { createEscalateAllClassifier, failClosed, type BashClassifier } from './fail-closed-classifier.ts';
import { locateWasmFiles } from './wasm-files.ts';
import type { BashGateWasm } from './parser-loader.ts';
import { errorMessage } from '../rpc/errors.ts';

export type BashClassifierFactory = (wasm: BashGateWasm) => BashClassifier | Promise<BashClassifier>;

export async function loadBashClassifier(options: {
  create: BashClassifierFactory;
  scriptUrl: string;
  wasmDir?: string | undefined;
  logger: Pick<AgentLogger, 'info' | 'warn'>;
}): Promise<BashClassifier> {
  try {
    const wasm = locateWasmFiles({
      scriptUrl: options.scriptUrl,
      ...(options.wasmDir ? { explicitDir: options.wasmDir } : {}),
    });
    const classifier = failClosed(await options.create(wasm));
    // The parser loads after "agent ready", off the boot's path: this line is how a reader of the log (or a
    // test) knows it is in place rather than guessing how long the load takes.
    options.logger.info({}, 'bash classifier loaded');
    return classifier;
  } catch (error) {
    const detail = errorMessage(error);
    options.logger.warn(
      { error: detail },
      'bash classifier unavailable: every bash command will ask the host',
    );
    return createEscalateAllClassifier(`the in-container classifier is unavailable (${detail})`);
  }
}
