import { describe, expect, it } from 'vitest';
import { SealedSecretError, seal, unseal } from '../../api/sealed-secret';

describe('sealed secrets', () => {
  it('round-trips, and never shows the plain text', () => {
    const sealed = seal('eyJ.jit-config.secret', 'installation-key-0123456789');
    expect(sealed).not.toContain('jit-config');
    expect(seal('eyJ.jit-config.secret', 'installation-key-0123456789')).not.toBe(sealed);
    expect(unseal(sealed, 'installation-key-0123456789')).toBe('eyJ.jit-config.secret');
  });

  it('refuses another key and any tampering', () => {
    const sealed = seal('secret', 'installation-key-0123456789');
    expect(() => unseal(sealed, 'another-key-0123456789')).toThrow(SealedSecretError);
    const parts = sealed.split('.');
    parts[3] = Buffer.from('forged').toString('base64url');
    expect(() => unseal(parts.join('.'), 'installation-key-0123456789')).toThrow(SealedSecretError);
    expect(() => unseal('garbage', 'installation-key-0123456789')).toThrow(/not a sealed secret/);
  });
});
