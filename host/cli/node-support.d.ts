/** What is missing when `version` is older than package.json's `engines.node`; `undefined` when it qualifies. */
export function nodeVersionProblem(packageFile: string | URL, version?: string): string | undefined;
