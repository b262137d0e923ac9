from kb_ai.cli import main

main(prog_name="kb-ai")
