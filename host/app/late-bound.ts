/**
 * A part that exists only later in the start than the code that calls it (the console's routes are served
 * before the queue, the runtime or the reloader exist): callers read `get()` at use and handle `undefined`
 * as "not there yet". One holder per part, set exactly once where the part is built.
 */
export function lateBound<T>() {
  let value: T | undefined;
  return {
    set(v: T): void {
      value = v;
    },
    get(): T | undefined {
      return value;
    },
  };
}

export type LateBound<T> = ReturnType<typeof lateBound<T>>;
