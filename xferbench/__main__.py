from xferbench.cli import main

main()
