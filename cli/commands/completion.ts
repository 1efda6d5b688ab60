/** `runnerflow completion bash`: a completion script built from the command table, so it never lists a command that is gone. */
import type { Command } from '../command';

type Groups = Record<string, Record<string, Command>>;

const optionWords = (command: Command, globals: readonly string[]): string =>
  [...Object.keys(command.options).map((o) => `--${o}`), ...globals].join(' ');

export function bashCompletion(groups: Groups, globals: readonly string[]): string {
  const cases = Object.entries(groups).flatMap(([group, commands]) =>
    Object.entries(commands)
      .filter(([name]) => name !== '')
      .map(([name, command]) => `    "${group} ${name}") words="${optionWords(command, globals)}" ;;`),
  );
  // A group that is a command of its own ('' names it) completes its options after its name.
  const subcommands = Object.entries(groups).map(([group, commands]) => `    ${group}) words="${commands[''] ? optionWords(commands[''], globals) : Object.keys(commands).join(' ')}" ;;`);
  return `# bash completion for runnerflow; load with: source <(runnerflow completion bash)
_runnerflow() {
  local cur words="" group="" command="" i
  cur="\${COMP_WORDS[COMP_CWORD]}"
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in
      --url|--token) ((i++)) ;;
      -*) ;;
      *) if [[ -z $group ]]; then group="\${COMP_WORDS[i]}"; elif [[ -z $command ]]; then command="\${COMP_WORDS[i]}"; fi ;;
    esac
  done
  if [[ -z $group ]]; then
    words="${Object.keys(groups).join(' ')}"
  elif [[ -z $command ]]; then
    case "$group" in
${subcommands.join('\n')}
    esac
  else
    case "$group $command" in
${cases.join('\n')}
    esac
    [[ $cur == -* ]] || words=""
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _runnerflow runnerflow`;
}

export function completionCommands(groups: () => Groups, globals: readonly string[]): Record<string, Command> {
  return {
    bash: {
      usage: 'bash',
      summary: 'Print a bash completion script (source <(runnerflow completion bash))',
      options: {},
      arity: 0,
      async run(ctx) {
        ctx.out(bashCompletion(groups(), globals));
      },
    },
  };
}
