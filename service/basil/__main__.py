from basil.cli import main

main()
