/** runOperatorCommand when what reads the command's output stops early (`cli … | true`). */
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
