import type { RunningFerretDb } from './ferretdb'

export default async function globalTeardown(): Promise<void> {
  const ferret = (globalThis as { __svcFerret?: RunningFerretDb }).__svcFerret
  if (ferret) await ferret.stop('SIGKILL') // its data folder is temporary
}
