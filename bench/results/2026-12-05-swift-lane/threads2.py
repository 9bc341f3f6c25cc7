import sys
a={}
for l in open('a.txt'):
    p,t,c,v=l.split(); a[(p,t)]=(c,int(v))
bind=sys.argv[1]
out={}
for l in open('b.txt'):
    p,t,c,v=l.split()
    if (p,t) in a:
        d=(int(v)-a[(p,t)][1])/4
        side='receiver' if p==bind else 'sender'
        k=(side,'io' if c=='weida-io' else 'swift')
        out[k]=out.get(k,0)+d
print(' '.join(f"{s}/{t} {v:.0f}%" for (s,t),v in sorted(out.items())))
