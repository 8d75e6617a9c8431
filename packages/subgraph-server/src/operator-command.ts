/**
 * What every domain's operator command (`npm run operator…`) shares: a usage error that prints the usage and exits
 * 2, a required-option reader, and the exit codes (contract errors print `<Code>: <message>` and exit 1).
 */
import { ContractError } from '@svc/errors'

/** A command line the command cannot run: the message and the usage are printed, exit code 2. */
export class UsageError extends Error {}

/** The value of a required `--name` string option. */
export function requiredOption(values: Record<string, unknown>, name: string): string {
  const v = values[name]
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`)
  return v
}

/** Runs an operator command's main and turns its failures into messages and exit codes. */
export function runOperatorCommand(main: (argv: string[]) => Promise<void>, usage: string): void {
  main(process.argv.slice(2)).catch((err: unknown) => {
    // node's parseArgs: an unknown option, an option without its value, a value given to a flag
    if (err instanceof UsageError || String((err as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS_')) {
      process.stderr.write(`${(err as Error).message}\n\n${usage}\n`)
      process.exit(2)
    }
    if (err instanceof ContractError) {
      process.stderr.write(`${err.code}: ${err.message}\n`)
      process.exit(1)
    }
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`)
    process.exit(1)
  })
}
