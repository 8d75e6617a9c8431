import { sharedRun } from '../src/shared-runs'

function gate<T>() {
  let open!: (value: T) => void
  let fail!: (err: Error) => void
  const promise = new Promise<T>((resolve, reject) => ((open = resolve), (fail = reject)))
  return { promise, open, fail }
}

test('concurrent callers of a key share one run; a run that answered is forgotten', async () => {
  const source = {}
  let runs = 0
  const g = gate<number>()
  const run = () => (runs++, g.promise)
  const both = Promise.all([sharedRun(source, 'k', run), sharedRun(source, 'k', run)])
  g.open(7)
  expect(await both).toEqual([7, 7])
  expect(runs).toBe(1)
  expect(await sharedRun(source, 'k', async () => (runs++, 8))).toBe(8)
  expect(runs).toBe(2)
})

test('other keys and other sources run on their own', async () => {
  const [a, b] = [{}, {}]
  let runs = 0
  const g = gate<string>()
  const run = () => (runs++, g.promise)
  const all = Promise.all([sharedRun(a, 'k', run), sharedRun(a, 'other', run), sharedRun(b, 'k', run)])
  g.open('x')
  await all
  expect(runs).toBe(3)
})

test('a failure reaches every caller of the run and is not kept', async () => {
  const source = {}
  const g = gate<number>()
  const both = Promise.allSettled([sharedRun(source, 'k', () => g.promise), sharedRun(source, 'k', () => g.promise)])
  g.fail(new Error('down'))
  expect((await both).map((r) => r.status)).toEqual(['rejected', 'rejected'])
  expect(await sharedRun(source, 'k', async () => 1)).toBe(1)
})
