/**
 * The intake's batcher: one signal in flight per target, and, with a detour,
 * a target that does not take a batch in time is gone around until its slow
 * signal returns.
 */
import { describe, expect, it } from 'vitest';
import { SignalBatcher, type Detour } from '../../api/signal-batcher';

interface Gate {
  promise: Promise<void>;
  open(): void;
  fail(err: Error): void;
}

function gate(): Gate {
  let open!: () => void;
  let fail!: (err: Error) => void;
  const promise = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A target whose signals wait on gates the test opens, and a detour that records what it took. */
function rig(detourOverrides: Partial<Detour<number>> = {}) {
  const sent: { workflowId: string; items: number[]; gate: Gate }[] = [];
  const detoured: { workflowId: string; items: number[]; spell: string }[] = [];
  const batcher = new SignalBatcher<number>(
    (workflowId, items) => {
      const g = gate();
      sent.push({ workflowId, items, gate: g });
      return g.promise;
    },
    {
      detour: {
        afterMs: 50,
        send: async (workflowId, items, spell) => {
          detoured.push({ workflowId, items, spell });
        },
        ...detourOverrides,
      },
    },
  );
  return { batcher, sent, detoured };
}

describe('SignalBatcher with a detour', () => {
  it('leaves a target that answers in time alone', async () => {
    const { batcher, sent, detoured } = rig();
    const done = batcher.add('pool/a', 1);
    await sleep(5);
    sent[0]!.gate.open();
    await done;
    expect(sent.map((s) => s.items)).toEqual([[1]]);
    expect(detoured).toEqual([]);
  });

  it('hands a batch the target has not taken in time to the detour, and answers without waiting for the target', async () => {
    const { batcher, sent, detoured } = rig();
    const started = Date.now();
    await batcher.add('pool/a', 1);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(sent.map((s) => s.items)).toEqual([[1]]);
    expect(detoured.map((d) => [d.workflowId, d.items])).toEqual([['pool/a', [1]]]);
    // The slow signal is left to land (the pool drops a job it already has).
    sent[0]!.gate.open();
  });

  it('sends every batch of a slow spell straight to the detour, in one spell, and goes back to the target once its signal returns', async () => {
    const { batcher, sent, detoured } = rig();
    await batcher.add('pool/a', 1);
    await Promise.all([batcher.add('pool/a', 2), batcher.add('pool/a', 3)]);
    await batcher.add('pool/a', 4);
    // Only the first signal went to the target: while it is out, nothing else waits on it.
    expect(sent).toHaveLength(1);
    expect(detoured.flatMap((d) => d.items)).toEqual([1, 2, 3, 4]);
    expect(new Set(detoured.map((d) => d.spell)).size).toBe(1);

    sent[0]!.gate.open();
    await sleep(5);
    const back = batcher.add('pool/a', 5);
    await sleep(5);
    expect(sent.map((s) => s.items)).toEqual([[1], [5]]);
    sent[1]!.gate.open();
    await back;
    expect(detoured.flatMap((d) => d.items)).toEqual([1, 2, 3, 4]);
  });

  it('keeps slow spells of different targets apart', async () => {
    const { batcher, detoured } = rig();
    await Promise.all([batcher.add('pool/a', 1), batcher.add('pool/b', 2)]);
    expect(detoured.map((d) => d.workflowId).sort()).toEqual(['pool/a', 'pool/b']);
    expect(new Set(detoured.map((d) => d.spell)).size).toBe(2);
  });

  it('starts a new spell after batchesPerSpell batches, so no one relay holds an endless spell', async () => {
    const { batcher, detoured } = rig({ batchesPerSpell: 2 });
    for (const item of [1, 2, 3, 4, 5]) await batcher.add('pool/a', item);
    const spells = detoured.map((d) => d.spell);
    expect(spells[0]).toBe(spells[1]);
    expect(spells[2]).not.toBe(spells[1]);
    expect(spells[2]).toBe(spells[3]);
    expect(spells[4]).not.toBe(spells[3]);
  });

  it('when the detour fails, waits for the target after all, and reports its answer', async () => {
    const { batcher, sent } = rig({
      send: async () => {
        throw new Error('relay unavailable');
      },
    });
    let settled = false;
    const first = batcher.add('pool/a', 1).finally(() => (settled = true));
    await sleep(120);
    expect(settled).toBe(false);
    sent[0]!.gate.open();
    await first;

    const second = batcher.add('pool/a', 2);
    await sleep(120);
    sent[1]!.gate.fail(new Error('pool refused'));
    await expect(second).rejects.toThrow('pool refused');
  });

  it('without a detour, waits for the target however long it takes', async () => {
    const sent: Gate[] = [];
    const batcher = new SignalBatcher<number>(() => {
      const g = gate();
      sent.push(g);
      return g.promise;
    });
    let settled = false;
    const done = batcher.add('pool/a', 1).finally(() => (settled = true));
    await sleep(120);
    expect(settled).toBe(false);
    sent[0]!.open();
    await done;
  });
});

describe('SignalBatcher with a pace', () => {
  it('sends a job that finds its target quiet at once, and gathers a burst into one batch per pace', async () => {
    const sent: { items: number[]; at: number }[] = [];
    const batcher = new SignalBatcher<number>(
      async (_workflowId, items) => {
        sent.push({ items, at: Date.now() });
      },
      // A pace long against the bound for "at once", so a machine busy with other tests cannot blur the two.
      { paceMs: 1_000 },
    );
    const started = Date.now();
    await batcher.add('pool/a', 1);
    expect(Date.now() - started).toBeLessThan(500);

    // Arriving while the pace runs: one batch when it is over, not one signal each.
    const burst = [2, 3, 4].map((n) => batcher.add('pool/a', n));
    await Promise.all(burst);
    expect(sent.map((s) => s.items)).toEqual([[1], [2, 3, 4]]);
    expect(sent[1]!.at - sent[0]!.at).toBeGreaterThanOrEqual(950);

    // Other targets keep their own pace.
    const other = Date.now();
    await batcher.add('pool/b', 5);
    expect(Date.now() - other).toBeLessThan(500);

    // Quiet for longer than the pace: at once again.
    await sleep(1_100);
    const later = Date.now();
    await batcher.add('pool/a', 6);
    expect(Date.now() - later).toBeLessThan(500);
    expect(sent.map((s) => s.items)).toEqual([[1], [2, 3, 4], [5], [6]]);
  });

  it('fails only the batch whose signal failed, and keeps pacing after it', async () => {
    let calls = 0;
    const batcher = new SignalBatcher<number>(
      async () => {
        calls += 1;
        if (calls === 1) throw new Error('pool refused');
      },
      { paceMs: 50 },
    );
    await expect(batcher.add('pool/a', 1)).rejects.toThrow('pool refused');
    await expect(Promise.all([batcher.add('pool/a', 2), batcher.add('pool/a', 3)])).resolves.toEqual([undefined, undefined]);
    expect(calls).toBe(2);
  });
});

describe('SignalBatcher batch size', () => {
  it('cuts a batch by its size as JSON too, and sends an item larger than the bound on its own', async () => {
    const sent: string[][] = [];
    let first = true;
    const batcher = new SignalBatcher<string>(
      async (_workflowId, items) => {
        sent.push(items);
        // The first signal is slow, so the rest wait and go out as batches.
        if (first) {
          first = false;
          await sleep(200);
        }
      },
      { maxBatchBytes: 1_000 },
    );
    const head = batcher.add('pool/a', 'first');
    const rest = [...Array.from({ length: 6 }, (_, i) => `${i}-${'x'.repeat(300)}`), 'y'.repeat(5_000), 'z'].map((item) => batcher.add('pool/a', item));
    await Promise.all([head, ...rest]);
    expect(sent.map((items) => items.map((i) => i.slice(0, 2)))).toEqual([['fi'], ['0-', '1-', '2-'], ['3-', '4-', '5-'], ['yy'], ['z']]);
    expect(sent.every((items) => items.length === 1 || JSON.stringify(items).length <= 1_000 + 2 * items.length)).toBe(true);
  });
});

describe('SignalBatcher with a target that refuses', () => {
  class Refused extends Error {}

  it('goes around at the first refusal, keeps going around for a while, then asks the target again', async () => {
    const direct: number[][] = [];
    let refusing = true;
    const detoured: { items: number[]; spell: string }[] = [];
    const batcher = new SignalBatcher<number>(
      async (_workflowId, items) => {
        if (refusing) throw new Refused('workflow is closing');
        direct.push(items);
      },
      {
        detour: {
          afterMs: 5_000,
          refusedForMs: 100,
          refused: (err) => err instanceof Refused,
          send: async (_workflowId, items, spell) => {
            detoured.push({ items, spell });
          },
        },
      },
    );
    const started = Date.now();
    await batcher.add('pool/a', 1);
    expect(Date.now() - started).toBeLessThan(1_000);
    // Within the refusal's spell: around, without asking the target.
    await batcher.add('pool/a', 2);
    // Asked again after the spell and refused again: still the same place.
    await sleep(150);
    await batcher.add('pool/a', 3);
    expect(detoured.map((d) => d.items)).toEqual([[1], [2], [3]]);
    expect(new Set(detoured.map((d) => d.spell)).size).toBe(1);
    expect(direct).toEqual([]);

    refusing = false;
    await sleep(150);
    await batcher.add('pool/a', 4);
    expect(direct).toEqual([[4]]);
    // A refusal after the target took a signal is a new spell.
    refusing = true;
    await batcher.add('pool/a', 5);
    expect(detoured.map((d) => d.items)).toEqual([[1], [2], [3], [5]]);
    expect(detoured[3]!.spell).not.toBe(detoured[0]!.spell);
  });

  it('waits for the target when the detour fails after a refusal, and fails what no refusal explains', async () => {
    let attempts = 0;
    const waited: number[][] = [];
    const batcher = new SignalBatcher<number>(
      async () => {
        attempts += 1;
        throw attempts === 1 ? new Refused('workflow is closing') : new Error('server down');
      },
      {
        detour: {
          afterMs: 5_000,
          refused: (err) => err instanceof Refused,
          send: async () => {
            throw new Error('relay failed');
          },
          waitForTarget: async (_workflowId, items) => {
            waited.push(items);
          },
        },
      },
    );
    await batcher.add('pool/a', 1);
    expect(waited).toEqual([[1]]);
    await sleep(150);
    await expect(batcher.add('pool/a', 2)).rejects.toThrow('server down');
  });
});
