/** A scale-set pool on the dashboard: marked in the pool list, its scale set shown with the pool's runners. */
import { describe, expect, it } from 'vitest';
import { apiRequest } from '../../devstack/stack';
import { listenerState, scaleSetPool, useScaleSetStack } from '../scale-set/support/stack';
import { eventually } from '../support/temporal';
import { openDashboard, poolRow, showPool, useBrowser } from './browser';

const stack = useScaleSetStack();
const browser = useBrowser();

describe('dashboard with a scale-set pool', () => {
  it("shows the pool's scale set: session, last message id, statistics and desired count", async () => {
    const pool = scaleSetPool();
    const created = await apiRequest(stack, 'POST', '/api/v1/pools', pool);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const listening = await eventually(async () => {
      const state = await listenerState(stack.client, pool.name);
      return state?.status === 'listening' && state.sessionId ? state : undefined;
    }, 30_000, 'listener in session');

    const page = await openDashboard(browser, stack);
    await poolRow(page, pool.name).getByText('scale set', { exact: true }).waitFor();
    await showPool(page, pool.name);
    const scaleSet = page.getByRole('group', { name: 'Scale set' });
    await scaleSet.getByText(listening.sessionId!, { exact: true }).waitFor();
    for (const field of ['lastMessageId', 'statistics', 'desiredRunners', 'status']) {
      await scaleSet.getByRole('term').filter({ hasText: new RegExp(`^${field}$`) }).first().waitFor();
    }
  });
});
