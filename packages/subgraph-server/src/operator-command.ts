/**
 * What every domain's operator command (`npm run operator…`) shares: a usage error that prints the usage and exits
 * 2, a required-option reader, and the exit codes (contract errors print `<Code>: <message>` and exit 1; the database
 * or Redis away, or ServiceUnavailable, exit 75: try again later).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { ContractError } from '@svc/errors'
import { isRedisUnavailable } from '@svc/operations'
import { isDatabaseUnreachable } from './database-errors'

/** sysexits' EX_TEMPFAIL: nothing is wrong with the command; run it again later (a script may retry on it). */
export const EXIT_TRY_AGAIN = 75

/** A command line the command cannot run: the message and the usage are printed, exit code 2. */
export class UsageError extends Error {}

/** The value of a required `--name` string option. */
export function requiredOption(values: Record<string, unknown>, name: string): string {
  const v = values[name]
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`)
  return v
}

type OptionsConfig = NonNullable<ParseArgsConfig['options']>

/**
 * An operator command line: its options (node's parseArgs) and its command, the first word. Each option at most once,
 * and only those the command takes (`--json` and `--help` always), else a UsageError: a repeated `--env` took its
 * last value (`issue-key --env test --env live` issued a live key), and another command's option was ignored
 * (`sweep --id chk_…` swept every checkout). A command not in `takes` is left for the caller to refuse.
 */
export function parseOperatorArgs<const O extends OptionsConfig>(argv: string[], options: O, takes: Readonly<Record<string, readonly (keyof O & string)[]>>) {
  const { values, positionals, tokens } = parseArgs({ args: argv, options, allowPositionals: true, tokens: true })
  const command: string | undefined = positionals[0]
  const allowed: readonly string[] | undefined = command !== undefined && Object.hasOwn(takes, command) ? takes[command] : undefined
  if (allowed) {
    if (positionals.length > 1) throw new UsageError(`${command} takes no argument ${positionals[1]}`)
    const seen = new Set<string>()
    for (const token of tokens) {
      if (token.kind !== 'option') continue
      if (seen.has(token.name)) throw new UsageError(`--${token.name} is given twice`)
      seen.add(token.name)
      if (token.name !== 'json' && token.name !== 'help' && !allowed.includes(token.name)) throw new UsageError(`${command} takes no --${token.name}`)
    }
  }
  return { values, command }
}

/** Runs an operator command's main and turns its failures into messages and exit codes. */
export function runOperatorCommand(main: (argv: string[]) => Promise<void>, usage: string): void {
  // output closed before it was all written (`| true`): the command has run (a secret it printed is lost), so say
  // that in one line rather than die on an unhandled 'error' with its stack
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err
    process.stderr.write('the output was closed before all of it was written: the command ran; what it printed is lost\n')
    process.exit(1)
  })
  // a first Ctrl-C or SIGTERM lets the command finish what it started (a turn it holds would otherwise block that
  // app environment's changes for its lease, a rotation could stop between its writes), then exits 130 or 143; a
  // second one exits at once
  let stopping: number | null = null
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    process.on(signal, () => {
      if (stopping !== null) process.exit(code)
      stopping = code
      process.stderr.write(`${signal}: finishing what the command started (send it again to stop at once)\n`)
    })
  }
  main(process.argv.slice(2)).then(() => {
    if (stopping !== null) process.exit(stopping)
  }, (err: unknown) => {
    // node's parseArgs: an unknown option, an option without its value, a value given to a flag
    if (err instanceof UsageError || String((err as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS_')) {
      process.stderr.write(`${(err as Error).message}\n\n${usage}\n`)
      process.exit(2)
    }
    if (err instanceof ContractError) {
      process.stderr.write(`${err.code}: ${err.message}\n`)
      process.exit(err.code === 'ServiceUnavailable' ? EXIT_TRY_AGAIN : 1)
    }
    // the database or Redis away, a configuration refused: one line (the stack with DEBUG=1)
    const line = err instanceof Error ? (err.name === 'Error' ? err.message : `${err.name}: ${err.message}`) : String(err)
    process.stderr.write(`${process.env.DEBUG && err instanceof Error ? err.stack : line}\n`)
    process.exit(isDatabaseUnreachable(err) || isRedisUnavailable(err) ? EXIT_TRY_AGAIN : 1)
  })
}
