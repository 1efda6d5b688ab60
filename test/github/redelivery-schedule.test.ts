/**
 * Which credentials get a redelivery schedule: an App always; a token only when runnerflow
 * knows the URL GitHub delivers to, configured, never guessed from where the API listens.
 */
import { ScheduleNotFoundError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../config/load';
import { ensureRedeliverySchedules, redeliveryScheduleId } from '../../worker/redelivery-schedule';
import { uniqueName, useScheduleClient } from '../support/temporal';

const schedules = useScheduleClient();

const token = (name: string) => ({ name, auth: { type: 'pat', token: { env: 'RUNNERFLOW_TEST_UNUSED_TOKEN' } } });
const app = (name: string) => ({ name, auth: { type: 'app', appId: 1, installationId: 1, privateKey: { env: 'RUNNERFLOW_TEST_UNUSED_KEY' } } });

describe('ensureRedeliverySchedules', () => {
  it("follows an App's webhook, and a token's webhooks only once runnerflow's webhook URL is configured", async () => {
    const [appName, tokenName] = [uniqueName('app').toLowerCase(), uniqueName('tok').toLowerCase()];
    schedules.created.push(redeliveryScheduleId(appName), redeliveryScheduleId(tokenName));
    const unknownUrl = parseConfig({ github: { credentials: [app(appName), token(tokenName)] }, api: { listen: '127.0.0.1:8080' } });
    expect(await ensureRedeliverySchedules(schedules.client, unknownUrl, 'redelivery-tq')).toEqual([{ scheduleId: redeliveryScheduleId(appName), change: 'created' }]);
    await expect(schedules.client.schedule.getHandle(redeliveryScheduleId(tokenName)).describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
    const appArgs = (await schedules.client.schedule.getHandle(redeliveryScheduleId(appName)).describe()).action.args;
    expect(appArgs).toEqual([expect.not.objectContaining({ webhookUrl: expect.anything() })]);

    // The public URL names where GitHub delivers: the token's schedule follows webhooks that deliver there.
    const withPublicUrl = parseConfig({ github: { credentials: [app(appName), token(tokenName)] }, api: { publicUrl: 'https://runners.example.com/' } });
    expect((await ensureRedeliverySchedules(schedules.client, withPublicUrl, 'redelivery-tq')).map((r) => r.change)).toEqual(['unchanged', 'created']);
    const tokenArgs = (await schedules.client.schedule.getHandle(redeliveryScheduleId(tokenName)).describe()).action.args;
    expect(tokenArgs).toEqual([expect.objectContaining({ credentials: tokenName, webhookUrl: 'https://runners.example.com/webhooks/github', hookRefreshMs: 600_000 })]);

    // An explicit webhook URL wins; losing both pauses the schedule and says why.
    const explicit = parseConfig({ github: { credentials: [token(tokenName)] }, api: { publicUrl: 'https://runners.example.com' }, redelivery: { webhookUrl: 'https://hooks.example.com/gh' } });
    expect((await ensureRedeliverySchedules(schedules.client, explicit, 'redelivery-tq'))[0]?.change).toBe('updated');
    expect((await schedules.client.schedule.getHandle(redeliveryScheduleId(tokenName)).describe()).action.args).toEqual([expect.objectContaining({ webhookUrl: 'https://hooks.example.com/gh' })]);
    expect(await ensureRedeliverySchedules(schedules.client, parseConfig({ github: { credentials: [token(tokenName)] } }), 'redelivery-tq')).toEqual([{ scheduleId: redeliveryScheduleId(tokenName), change: 'paused' }]);
    const paused = await schedules.client.schedule.getHandle(redeliveryScheduleId(tokenName)).describe();
    expect(paused.state).toMatchObject({ paused: true, note: expect.stringContaining('set redelivery.webhookUrl (or api.publicUrl)') });
  });

  it('rejects a webhook URL that is not one, naming the key', () => {
    expect(() => parseConfig({ redelivery: { webhookUrl: 'runners/webhooks' } })).toThrow(/redelivery\.webhookUrl/);
  });
});
