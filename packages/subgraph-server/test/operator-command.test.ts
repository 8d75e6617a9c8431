/** runOperatorCommand when what reads the command's output stops early (`cli … | true`), and on Ctrl-C or SIGTERM. */
import { spawn } from 'node:child_process'
import { join } from 'node:path'

const ROOT = join(__dirname, '..', '..', '..')
const TSX = join(ROOT, 'node_modules', '.bin', 'tsx')

jest.setTimeout(120_000)

it('output closed early: one line saying the command ran, exit 1, no stack', async () => {
  const child = spawn(TSX, [join(__dirname, 'fixtures', 'printing-command.ts')], { stdio: ['ignore', 'pipe', 'pipe'] })
  child.stdout.destroy() // the reader is gone before the command writes
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  expect({ code, stderr }).toEqual({ code: 1, stderr: 'the output was closed before all of it was written: the command ran; what it printed is lost\n' })
})

describe('a signal while the command runs', () => {
  const run = (signals: NodeJS.Signals[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(TSX, [join(__dirname, 'fixtures', 'slow-command.ts')], { stdio: ['ignore', 'pipe', 'pipe'] })
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString()
        // once it has started: the first signal; each next one once the command said it took the last (two sent at
        // once may reach it as one)
        if (stdout === 'started\n') child.kill(signals[0])
      })
      let sent = 1
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString()
        if (stderr.includes('finishing what the command started') && sent < signals.length) child.kill(signals[sent++])
      })
      child.on('close', (code) => resolve({ code, stdout, stderr }))
    })

  it('the first lets it finish what it started, then exits 130 (SIGINT) or 143 (SIGTERM)', async () => {
    expect(await run(['SIGINT'])).toEqual({ code: 130, stdout: 'started\nfinished\n', stderr: 'SIGINT: finishing what the command started (send it again to stop at once)\n' })
    expect(await run(['SIGTERM'])).toMatchObject({ code: 143, stdout: 'started\nfinished\n' })
  })

  it('a second one stops it at once', async () => {
    expect(await run(['SIGINT', 'SIGINT'])).toMatchObject({ code: 130, stdout: 'started\n' })
  })
})
